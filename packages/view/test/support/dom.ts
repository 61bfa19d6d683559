/**
 * The few browser types the in-page callbacks of the tests use. The project
 * compiles without the DOM library (its code runs on Node), and adding that
 * library would change the globals every package type-checks against; so the
 * test files declare `document` and `window` with these shapes, in module
 * scope only.
 */
export interface DomElement {
  readonly id: string
  readonly tagName: string
  readonly textContent: string | null
  readonly attributes: ArrayLike<{ readonly name: string; readonly value: string }>
  open?: boolean
  innerHTML: string
  checkVisibility(): boolean
  querySelector(selector: string): DomElement | null
  getAttribute(name: string): string | null
  append(...nodes: Array<DomElement>): void
  click(): void
}

export interface DomDocument {
  readonly documentElement: DomElement
  readonly body: DomElement
  readonly activeElement: DomElement | null
  getElementById(id: string): DomElement | null
  createElement(tag: string): DomElement
  addEventListener(type: "securitypolicyviolation", listener: (event: { readonly effectiveDirective: string; readonly blockedURI: string }) => void): void
}

export interface DomWindow {
  readonly performance: {
    now(): number
    getEntriesByType(type: "navigation"): Array<{ readonly domContentLoadedEventEnd: number }>
    getEntriesByName(name: string): Array<{ readonly startTime: number }>
  }
  __violations?: Array<{ readonly directive: string; readonly blocked: string }>
  __pwned?: unknown
}
