import { HttpApp, HttpServerResponse } from "@effect/platform"
import { Effect, Option } from "effect"
import { Accounts } from "../accounts/Accounts.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { readJson } from "../platform/http/Body.ts"
import { Secrets } from "../platform/Secrets.ts"
import { COOKIE, CurrentSession, type SessionState, type SignedIn, SignInRequest, SwitchAccountRequest } from "./Api.ts"
import { cookieOptions, sessionOfRequest } from "./ConsoleAuth.ts"
import { InvalidSignInKey, ResourceKeyNeeded } from "./Errors.ts"
import type { Session } from "./Session.ts"
import { ConsoleSessions, csrfToken, SESSION_TTL_S } from "./Sessions.ts"

/** What the page needs to know about its session; the CSRF token lives only in the page's memory. */
const describe = (session: Session) =>
  Effect.gen(function*() {
    const { limits } = yield* AppConfig
    const account = session.accountId === null ? null : yield* (yield* Accounts).detail(session.accountId).pipe(
      Effect.map((a) => ({ id: a.id, name: a.name })),
      Effect.orElseSucceed(() => null)
    )
    return {
      object: "console.session",
      signed_in: true,
      role: session.role,
      account,
      csrf_token: yield* csrfToken(session),
      expires_at: session.expiresAt,
      // The task log polls at the interval the API's Retry-After names.
      poll_interval_s: limits.poll_interval_s
    } satisfies typeof SignedIn.Type
  })

/** Sets (or, with `maxAge` 0, clears) the session cookie on the answer. */
const setCookie = (value: string, maxAgeSeconds: number) =>
  Effect.flatMap(cookieOptions, (options) =>
    HttpApp.appendPreResponseHandler((_, response) =>
      Effect.succeed(
        HttpServerResponse.unsafeSetCookie(response, COOKIE, value, {
          ...options,
          maxAge: `${maxAgeSeconds} seconds`
        })
      )
    ))

/**
 * The page's first question. Not being signed in is an answer here, not an
 * error: the page then shows the sign-in form (and the browser logs no failed request).
 */
export const getSession = Effect.flatMap(
  sessionOfRequest,
  (session): Effect.Effect<typeof SessionState.Type, never, AppConfig | Accounts> =>
    Option.isSome(session)
      ? describe(session.value)
      : Effect.succeed({ object: "console.session", signed_in: false })
)

/**
 * Sign-in with a resource key (the account's owner) or the admin token (the
 * operator). The key itself is never stored or echoed: only the session it
 * opens, in an HttpOnly cookie.
 */
export const signIn = Effect.gen(function*() {
  const { key } = yield* readJson(SignInRequest)
  const sessions = yield* ConsoleSessions
  let session: Session
  if ((yield* Secrets).checkAdminToken(key)) {
    session = yield* sessions.open("operator", null, null)
  } else {
    const credential = yield* (yield* Accounts).authenticate(key)
    if (Option.isNone(credential)) return yield* new InvalidSignInKey()
    if (credential.value.kind !== "resource") return yield* new ResourceKeyNeeded()
    session = yield* sessions.open("account", credential.value.accountId, credential.value.keyId)
  }
  yield* setCookie(session.token, SESSION_TTL_S)
  return yield* describe(session)
})

export const signOut = Effect.gen(function*() {
  yield* (yield* ConsoleSessions).close(yield* CurrentSession)
  yield* setCookie("", 0)
  return { object: "console.session", signed_out: true } as const
})

/** The operator picks the account whose tasks, resources and webhook the pages show. */
export const switchAccount = Effect.gen(function*() {
  const session = yield* CurrentSession
  const { account_id } = yield* readJson(SwitchAccountRequest)
  yield* (yield* Accounts).detail(account_id)
  yield* (yield* ConsoleSessions).switchAccount(session, account_id)
  return yield* describe({ ...session, accountId: account_id })
})
