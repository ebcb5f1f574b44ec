import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"
import { sha256Hex } from "../platform/Digest.ts"
import { randomBase62 } from "../platform/Ids.ts"
import { constantTimeEqual } from "../platform/Keys.ts"
import { nowSeconds } from "../platform/Time.ts"
import type { Session } from "./Session.ts"

/** Twelve hours: a working day, after which the console asks for the key again. */
export const SESSION_TTL_S = 12 * 3600

interface SessionRow {
  readonly token_hash: string
  readonly role: "account" | "operator"
  readonly account_id: string | null
  readonly key_disabled: boolean | null
  readonly expires_at: number
}

const toSession = (token: string, row: SessionRow): Session => ({
  token,
  tokenHash: row.token_hash,
  role: row.role,
  accountId: row.account_id,
  expiresAt: Number(row.expires_at)
})

const hash = (token: string) => Effect.promise(() => sha256Hex(token))

/**
 * The CSRF token of a session, derived from its cookie token: a page of the
 * console's origin learns it from `GET /console/api/session`, another site
 * can neither read that answer nor the HttpOnly cookie. Derived rather than
 * stored, so every tab of one session holds the same token, and a write's
 * token is checked against the cookie it came with, without a look-up.
 */
export const csrfTokenOf = (cookieToken: string) => hash(`console-csrf:${cookieToken}`)

export const csrfToken = (session: Session) => csrfTokenOf(session.token)

/**
 * Console sessions, kept in the database so that any replica serves any
 * browser and a restart signs nobody out. Tokens are stored as digests only.
 */
const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  const open = (role: Session["role"], accountId: string | null, keyId: string | null) =>
    Effect.gen(function*() {
      // 192 random bits each, like the API keys.
      const token = randomBase62(24)
      const now = yield* nowSeconds
      const session: Session = {
        token,
        tokenHash: yield* hash(token),
        role,
        accountId,
        expiresAt: now + SESSION_TTL_S
      }
      // Expired sessions are swept here, at sign-in, so the table stays small without a timer.
      yield* sql`DELETE FROM console_sessions WHERE expires_at < ${now}`
      yield* sql`
        INSERT INTO console_sessions (token_hash, role, account_id, key_id, created_at, expires_at)
        VALUES (${session.tokenHash}, ${role}, ${accountId}, ${keyId}, ${now}, ${session.expiresAt})`
      return session
    }).pipe(Effect.orDie, Effect.withSpan("ConsoleSessions.open"))

  /** The live session of a cookie token: unexpired, and its key (for an owner) still enabled. */
  const find = (token: string) =>
    Effect.gen(function*() {
      if (token.length === 0 || token.length > 64) return Option.none<Session>()
      const tokenHash = yield* hash(token)
      const now = yield* nowSeconds
      const [row] = yield* sql<SessionRow>`
        SELECT s.token_hash, s.role, s.account_id, s.expires_at,
          (k.disabled_at IS NOT NULL) AS key_disabled
        FROM console_sessions s LEFT JOIN api_keys k ON k.id = s.key_id
        WHERE s.token_hash = ${tokenHash}`
      if (row === undefined || !constantTimeEqual(row.token_hash, tokenHash)) return Option.none<Session>()
      if (Number(row.expires_at) < now || row.key_disabled === true) return Option.none<Session>()
      return Option.some(toSession(token, row))
    }).pipe(Effect.orDie, Effect.withSpan("ConsoleSessions.find"))

  const close = (session: Session) =>
    sql`DELETE FROM console_sessions WHERE token_hash = ${session.tokenHash}`.pipe(Effect.asVoid, Effect.orDie)

  const switchAccount = (session: Session, accountId: string) =>
    sql`UPDATE console_sessions SET account_id = ${accountId} WHERE token_hash = ${session.tokenHash}`.pipe(
      Effect.asVoid,
      Effect.orDie
    )

  return { open, find, close, switchAccount } as const
})

export class ConsoleSessions extends Context.Tag("ConsoleSessions")<
  ConsoleSessions,
  Effect.Effect.Success<typeof make>
>() {
  static readonly layer = Layer.effect(ConsoleSessions, make)
}
