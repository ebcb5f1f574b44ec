import { HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"

/** Where the API reference page (Scalar) is served. */
export const DOCS_PATH = "/docs"

/**
 * On every answer: browsers take the declared Content-Type as it is (no
 * sniffing a JSON or media answer into HTML), and no URL of ours (they can
 * carry signed query strings) leaves as a Referer.
 */
export const BASELINE_HEADERS = { "x-content-type-options": "nosniff", "referrer-policy": "no-referrer" } as const

/**
 * The Scalar page's needs beyond its inline scripts (allowed by hash): the
 * styles it injects at run time, its default fonts, images and previews it
 * makes from data and blob URLs, and "test request" calls to this origin
 * (the OpenAPI document names no other server). Nothing may frame it.
 */
const DOCS_POLICY = [
  "default-src 'none'",
  "style-src 'unsafe-inline'",
  "font-src https://fonts.scalar.com",
  "img-src 'self' data: blob:",
  "media-src 'self' blob:",
  "connect-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'"
]

/** The page's inline scripts that a browser runs: no `src`, no data type such as `application/json`. */
const INLINE_SCRIPT = /<script((?:\s[^>]*)?)>([\s\S]*?)<\/script\s*>/gi
const runs = (attributes: string) => {
  const type = /\stype\s*=\s*["']?([^"'\s>]+)/i.exec(attributes)?.[1]?.toLowerCase()
  return !/\ssrc\s*=/i.test(attributes) && (type === undefined || type === "module" || type === "text/javascript")
}

const base64 = (bytes: Uint8Array) => btoa(Array.from(bytes, (b) => String.fromCharCode(b)).join(""))

/** `'sha256-…'` of a script as a browser hashes it: its text, newlines normalised, in UTF-8. */
const scriptHash = (text: string) =>
  Effect.promise(() => crypto.subtle.digest("SHA-256", new TextEncoder().encode(text.replace(/\r\n?/g, "\n")))).pipe(
    Effect.map((digest) => `'sha256-${base64(new Uint8Array(digest))}'`)
  )

const docsPolicy = (html: string) =>
  Effect.map(
    Effect.forEach([...html.matchAll(INLINE_SCRIPT)].filter(([, attributes]) => runs(attributes ?? "")), ([, , text]) =>
      scriptHash(text ?? "")),
    (hashes) =>
      [...DOCS_POLICY, `script-src ${[...new Set(hashes)].join(" ")}`].join("; ")
  )

/** The page is built once, so its policy is too: by the body it was computed from. */
const policies = new WeakMap<object, string>()

const docsHeaders = (response: HttpServerResponse.HttpServerResponse) =>
  Effect.gen(function*() {
    if (response.body._tag !== "Uint8Array") return response
    let policy = policies.get(response.body)
    if (policy === undefined) {
      policy = yield* docsPolicy(new TextDecoder().decode(response.body.body))
      policies.set(response.body, policy)
    }
    return HttpServerResponse.setHeader(response, "content-security-policy", policy)
  })

/** The hardening headers of an answer to `path`; `/docs` also gets its Content-Security-Policy. */
export const withSecurityHeaders = (path: string, response: HttpServerResponse.HttpServerResponse) =>
  Effect.map(
    path === DOCS_PATH && response.status === 200 ? docsHeaders(response) : Effect.succeed(response),
    HttpServerResponse.setHeaders(BASELINE_HEADERS)
  )
