import { HttpServerResponse } from "@effect/platform"
import { Effect, Option, Schema } from "effect"
import { Accounts } from "../accounts/Accounts.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { readJson } from "../platform/http/Body.ts"
import { Secrets } from "../platform/Secrets.ts"
import { checkOrigin, COOKIE, cookieOptions, currentSession, requireOperator, writableSession } from "./ConsoleAuth.ts"
import { consoleError, json } from "./Respond.ts"
import { ConsoleSessions, csrfToken, type Session, SESSION_TTL_S } from "./Sessions.ts"

const SignIn = Schema.Struct({ key: Schema.String.pipe(Schema.maxLength(512)) })
const SwitchAccount = Schema.Struct({ account_id: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)) })

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
      role: session.role,
      account,
      csrf_token: yield* csrfToken(session),
      expires_at: session.expiresAt,
      // The task log polls at the interval the API's Retry-After names.
      poll_interval_s: limits.poll_interval_s
    }
  })

/**
 * The page's first question. Not being signed in is an answer here, not an
 * error: the page then shows the sign-in form (and the browser logs no failed request).
 */
export const getSession = currentSession.pipe(
  Effect.flatMap(describe),
  Effect.map((body) => json({ ...body, signed_in: true })),
  Effect.catchTag(
    "ConsoleError",
    (e) => e.status === 401 ? Effect.succeed(json({ object: "console.session", signed_in: false })) : Effect.fail(e)
  )
)

const wrongKey = consoleError(
  401,
  "invalid_key",
  "Unknown or disabled key. Sign in with a resource key (ak_…) or, as the operator, the admin token."
)

/**
 * Sign-in with a resource key (the account's owner) or the admin token (the
 * operator). The key itself is never stored or echoed: only the session it
 * opens, in an HttpOnly cookie.
 */
export const signIn = Effect.gen(function*() {
  yield* checkOrigin
  const { key } = yield* readJson(SignIn)
  const sessions = yield* ConsoleSessions
  let session: Session
  if ((yield* Secrets).checkAdminToken(key)) {
    session = yield* sessions.open("operator", null, null)
  } else {
    const credential = yield* (yield* Accounts).authenticate(key)
    if (Option.isNone(credential)) return yield* wrongKey
    if (credential.value.kind !== "resource") {
      return yield* consoleError(
        403,
        "resource_key_needed",
        "Sign in with a resource key (ak_…), not a model token or a webhook key."
      )
    }
    session = yield* sessions.open("account", credential.value.accountId, credential.value.keyId)
  }
  const options = yield* cookieOptions
  return HttpServerResponse.unsafeSetCookie(
    json({ ...(yield* describe(session)), signed_in: true }, 201),
    COOKIE,
    session.token,
    {
      ...options,
      maxAge: `${SESSION_TTL_S} seconds`
    }
  )
})

export const signOut = Effect.gen(function*() {
  const session = yield* writableSession
  yield* (yield* ConsoleSessions).close(session)
  const options = yield* cookieOptions
  return HttpServerResponse.unsafeSetCookie(json({ object: "console.session", signed_out: true }), COOKIE, "", {
    ...options,
    maxAge: 0
  })
})

/** The operator picks the account whose tasks, resources and webhook the pages show. */
export const switchAccount = Effect.gen(function*() {
  const session = yield* Effect.flatMap(writableSession, requireOperator)
  const { account_id } = yield* readJson(SwitchAccount)
  yield* (yield* Accounts).detail(account_id)
  yield* (yield* ConsoleSessions).switchAccount(session, account_id)
  return json({ ...(yield* describe({ ...session, accountId: account_id })), signed_in: true })
})
