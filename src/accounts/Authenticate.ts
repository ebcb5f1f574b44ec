import type { SqlClient, SqlError } from "@effect/sql"
import { Clock, Effect, Option } from "effect"
import type { Sha256 } from "../platform/Digest.ts"
import { constantTimeEqual, isWellFormedKey, KeyKind } from "../platform/Keys.ts"
import type { Credential } from "./Account.ts"
import type { KeyCache } from "./KeyCache.ts"

interface KeyRow {
  readonly id: string
  readonly account_id: string
  readonly kind: "model" | "resource"
  readonly key_hash: string
  readonly group_name: string | null
  readonly disabled_at: number | null
  readonly account_group: string
}

/**
 * Resolves a bearer key to its account, or nothing for an unknown or
 * disabled key. Every request does this; a key found in this replica's cache
 * (KeyCache.ts) costs a digest and a map look-up, so only a look-up that goes
 * to the database gets a span.
 */
export const makeAuthenticate = (
  sql: SqlClient.SqlClient,
  sha256: Sha256["Type"],
  cache: KeyCache["Type"]
) => {
  const traced = <A>(lookUp: Effect.Effect<A, SqlError.SqlError>) =>
    lookUp.pipe(
      Effect.orDie,
      // A stack trace per span would cost more than the look-up's own code.
      Effect.withSpan("Accounts.authenticate", { captureStackTrace: false })
    )

  const webhookKey = (hash: string) =>
    traced(Effect.map(
      sql<{ id: string; group_name: string; webhook_key_hash: string }>`
        SELECT * FROM accounts WHERE webhook_key_hash = ${hash}`,
      ([row]) =>
        row !== undefined && constantTimeEqual(row.webhook_key_hash, hash)
          ? Option.some<Credential>({ kind: "webhook", accountId: row.id, keyId: "webhook", group: row.group_name })
          : Option.none<Credential>()
    ))

  const apiKey = (hash: string, nowMs: number) =>
    traced(Effect.map(
      sql<KeyRow>`
        SELECT k.*, a.group_name AS account_group
        FROM api_keys k JOIN accounts a ON a.id = k.account_id
        WHERE k.key_hash = ${hash}`,
      ([row]) => {
        // The lookup is by digest; comparing the digest again in constant time
        // keeps the decision itself free of timing differences.
        if (row === undefined || row.disabled_at !== null || !constantTimeEqual(row.key_hash, hash)) {
          return Option.none<Credential>()
        }
        const principal = {
          accountId: row.account_id,
          keyId: row.id,
          kind: row.kind,
          group: row.group_name ?? row.account_group
        }
        cache.set(hash, principal, nowMs)
        return Option.some<Credential>(principal)
      }
    ))

  const hexNow = sha256.hexNow
  /**
   * The key's principal when this replica's cache holds it and the runtime
   * digests synchronously, with no effect run; undefined otherwise (the key
   * is then for `authenticate`, which decides). The fast routes' common case.
   */
  const cached = (key: string, nowMs: number): Credential | undefined =>
    hexNow !== undefined && isWellFormedKey(key) && !key.startsWith(KeyKind.webhook)
      ? cache.get(hexNow(key), nowMs)
      : undefined

  const authenticate = (key: string): Effect.Effect<Option.Option<Credential>> =>
    isWellFormedKey(key)
      // Same digest as hashKey, through the runtime's fastest primitive (the Sha256 port).
      ? Effect.flatMap(sha256.hex(key), (hash) =>
        key.startsWith(KeyKind.webhook)
          ? webhookKey(hash)
          : Effect.flatMap(Clock.currentTimeMillis, (nowMs) => {
            // Found by digest, like the query; only enabled keys are ever cached (KeyCache.ts).
            const cached = cache.get(hash, nowMs)
            return cached === undefined ? apiKey(hash, nowMs) : Effect.succeed(Option.some<Credential>(cached))
          }))
      : Effect.succeed(Option.none<Credential>())

  return { authenticate, cached }
}
