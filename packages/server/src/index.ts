export * as Server from "./Server.js"
