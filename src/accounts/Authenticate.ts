import type { SqlClient } from "@effect/sql"
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

/** Resolves a bearer key to its account, or nothing for an unknown or disabled key. */
export const makeAuthenticate = (
  sql: SqlClient.SqlClient,
  sha256: Sha256["Type"],
  cache: KeyCache["Type"]
) =>
(key: string) =>
  Effect.gen(function*() {
    if (!isWellFormedKey(key)) return Option.none<Credential>()
    // Same digest as hashKey, through the runtime's fastest primitive (the Sha256 port).
    const hash = yield* sha256.hex(key)
    if (key.startsWith(KeyKind.webhook)) {
      const rows = yield* sql<{ id: string; group_name: string; webhook_key_hash: string }>`
        SELECT * FROM accounts WHERE webhook_key_hash = ${hash}`
      const row = rows[0]
      return row !== undefined && constantTimeEqual(row.webhook_key_hash, hash)
        ? Option.some<Credential>({ kind: "webhook", accountId: row.id, keyId: "webhook", group: row.group_name })
        : Option.none<Credential>()
    }
    const nowMs = yield* Clock.currentTimeMillis
    // Found by digest, like the query below; only enabled keys are ever cached (KeyCache.ts).
    const cached = cache.get(hash, nowMs)
    if (cached !== undefined) return Option.some<Credential>(cached)
    const rows = yield* sql<KeyRow>`
      SELECT k.*, a.group_name AS account_group
      FROM api_keys k JOIN accounts a ON a.id = k.account_id
      WHERE k.key_hash = ${hash}`
    const row = rows[0]
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
  }).pipe(
    Effect.orDie,
    // Runs on every request: a stack trace per span would cost more than the lookup's own code.
    Effect.withSpan("Accounts.authenticate", { captureStackTrace: false })
  )
