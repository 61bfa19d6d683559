export * as Html from "./Html.js"
export * as HtmlParts from "./HtmlParts.js"
export * as Markdown from "./Markdown.js"
export * as Text from "./Text.js"
