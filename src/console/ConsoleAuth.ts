import { HttpServerRequest } from "@effect/platform"
import { Effect, Option } from "effect"
import { AppConfig } from "../platform/AppConfig.ts"
import { consoleError } from "./Respond.ts"
import { ConsoleSessions, type Session } from "./Sessions.ts"

/** The session cookie; scoped to the console's paths, so the API never sees it. */
export const COOKIE = "mtg_console"
export const COOKIE_PATH = "/console"
export const CSRF_HEADER = "x-csrf-token"

/** Secure whenever the public address is https, so the cookie never travels in clear. */
export const cookieOptions = Effect.map(AppConfig, (config) => ({
  httpOnly: true,
  sameSite: "strict" as const,
  secure: config.publicBaseUrl.startsWith("https:"),
  path: COOKIE_PATH
}))

const signInFirst = consoleError(401, "not_signed_in", "Sign in first.")

/** The live session of this request's cookie, or 401. */
export const currentSession = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const token = request.cookies[COOKIE]
  if (token === undefined) return yield* signInFirst
  const session = yield* (yield* ConsoleSessions).find(token)
  return Option.isSome(session) ? session.value : yield* signInFirst
})

/** The request's own origin as a browser names it, and the configured public one. */
const allowedOrigins = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const config = yield* AppConfig
  const origins = new Set<string>()
  try {
    origins.add(new URL(config.publicBaseUrl).origin)
  } catch {
    // An unparsable PUBLIC_BASE_URL adds nothing; the Host header still counts.
  }
  const host = request.headers.host
  if (host !== undefined) {
    origins.add(`http://${host}`)
    origins.add(`https://${host}`)
  }
  return origins
})

/**
 * A write must come from the console's own pages: a browser sends `Origin`
 * on every POST/PUT/DELETE, and it must be ours. The cookie is SameSite=Strict
 * already; the Origin check covers older browsers and same-site subdomains.
 */
export const checkOrigin = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const origin = request.headers.origin
  if (origin === undefined) return
  if (!(yield* allowedOrigins).has(origin)) {
    return yield* consoleError(403, "cross_origin", "Writes are accepted from the console's own pages only.")
  }
})

/**
 * A signed-in write: the Origin check plus the session's CSRF token in a
 * header (double submit: the page reads it from `GET /console/api/session`,
 * which another site cannot read).
 */
export const writableSession = Effect.gen(function*() {
  yield* checkOrigin
  const session = yield* currentSession
  const request = yield* HttpServerRequest.HttpServerRequest
  const sent = request.headers[CSRF_HEADER] ?? ""
  if (!(yield* (yield* ConsoleSessions).checkCsrf(session, sent))) {
    return yield* consoleError(403, "csrf_token_invalid", "Missing or wrong CSRF token; reload the page.")
  }
  return session
})

/** The operator's session, or 403 for an account owner. */
export const requireOperator = (session: Session) =>
  session.role === "operator"
    ? Effect.succeed(session)
    : consoleError(403, "operator_only", "This page is for the operator (sign in with the admin token).")

/** The account a session shows; an operator must choose one first. */
export const accountOf = (session: Session) =>
  session.accountId !== null
    ? Effect.succeed(session.accountId)
    : consoleError(409, "no_account_selected", "Choose an account first.")
