import { HttpServerRequest } from "@effect/platform"
import { Effect, Layer, Option, Redacted } from "effect"
import { AppConfig } from "../platform/AppConfig.ts"
import { constantTimeEqual } from "../platform/Keys.ts"
import {
  ConsoleCsrf,
  ConsoleOperator,
  ConsoleOrigin,
  ConsoleSession,
  ConsoleViewer,
  COOKIE,
  COOKIE_PATH
} from "./Api.ts"
import { CrossOrigin, CsrfTokenInvalid, NoAccountSelected, NotSignedIn, OperatorOnly } from "./Errors.ts"
import { ConsoleSessions, csrfTokenOf } from "./Sessions.ts"

/** The session cookie's attributes: Secure whenever the public address is https, so it never travels in clear. */
export const cookieOptions = Effect.map(AppConfig, (config) => ({
  httpOnly: true,
  sameSite: "strict" as const,
  secure: config.publicBaseUrl.startsWith("https:"),
  path: COOKIE_PATH
}))

/** The live session of this request's cookie, if any (the session endpoint answers "signed out" without one). */
export const sessionOfRequest = Effect.gen(function*() {
  const request = yield* HttpServerRequest.HttpServerRequest
  const token = request.cookies[COOKIE]
  return token === undefined ? Option.none() : yield* (yield* ConsoleSessions).find(token)
})

/** The request's own origin as a browser names it, and the configured public one. */
const allowedOrigins = (request: HttpServerRequest.HttpServerRequest, publicBaseUrl: string) => {
  const origins = new Set<string>()
  try {
    origins.add(new URL(publicBaseUrl).origin)
  } catch {
    // An unparsable PUBLIC_BASE_URL adds nothing; the Host header still counts.
  }
  const host = request.headers.host
  if (host !== undefined) {
    origins.add(`http://${host}`)
    origins.add(`https://${host}`)
  }
  return origins
}

/** No `Origin` (not a browser, or one that sends none for this request) passes; a foreign one is refused. */
const ConsoleOriginLive = Layer.effect(
  ConsoleOrigin,
  Effect.map(AppConfig, (config) =>
    Effect.gen(function*() {
      const request = yield* HttpServerRequest.HttpServerRequest
      const origin = request.headers.origin
      if (origin !== undefined && !allowedOrigins(request, config.publicBaseUrl).has(origin)) {
        return yield* new CrossOrigin()
      }
    }))
)

/**
 * The `X-CSRF-Token` header must be the token derived from the session
 * cookie sent with it (compared in constant time). The session itself is
 * checked by the session middleware, which runs first.
 */
const ConsoleCsrfLive = Layer.succeed(
  ConsoleCsrf,
  ConsoleCsrf.of({
    csrf: (sent) =>
      Effect.gen(function*() {
        const request = yield* HttpServerRequest.HttpServerRequest
        const token = request.cookies[COOKIE] ?? ""
        const expected = yield* csrfTokenOf(token)
        if (token === "" || !constantTimeEqual(expected, Redacted.value(sent))) {
          return yield* new CsrfTokenInvalid()
        }
      })
  })
)

/** The cookie's live session, or 401 `not_signed_in`. */
const liveSession = Effect.map(ConsoleSessions, (sessions) => (token: Redacted.Redacted<string>) =>
  Effect.flatMap(
    sessions.find(Redacted.value(token)),
    Option.match({ onNone: () => Effect.fail(new NotSignedIn()), onSome: Effect.succeed })
  ))

const ConsoleSessionLive = Layer.effect(
  ConsoleSession,
  Effect.map(liveSession, (session) => ConsoleSession.of({ cookie: session }))
)

/** The account a session shows; an operator must choose one first (409). */
const ConsoleViewerLive = Layer.effect(
  ConsoleViewer,
  Effect.map(liveSession, (session) =>
    ConsoleViewer.of({
      cookie: (token) =>
        Effect.flatMap(session(token), (s) =>
          s.accountId === null
            ? Effect.fail(new NoAccountSelected())
            : Effect.succeed({ session: s, accountId: s.accountId }))
    }))
)

/** The operator's session, or 403 for an account owner's. */
const ConsoleOperatorLive = Layer.effect(
  ConsoleOperator,
  Effect.map(liveSession, (session) =>
    ConsoleOperator.of({
      cookie: (token) =>
        Effect.flatMap(
          session(token),
          (s) => s.role === "operator" ? Effect.succeed(s) : Effect.fail(new OperatorOnly())
        )
    }))
)

/** Every middleware of the console's endpoints (Api.ts); needs the session store and the configuration. */
export const ConsoleAuthLive = Layer.mergeAll(
  ConsoleOriginLive,
  ConsoleCsrfLive,
  ConsoleSessionLive,
  ConsoleViewerLive,
  ConsoleOperatorLive
)
