import type { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"
import { EVENTS_CHANNEL } from "./Outbox.ts"

/**
 * Sends a failed (or skipped) event again, by hand: the same event id and
 * payload, a full new round of attempts, due at once. Earlier attempts stay
 * in its history; `resent_from` marks where the new round starts, so the
 * delivery worker counts failures and interruptions from there. False when
 * the account has no such event in `failed` or `skipped` (a pending or
 * delivered event is left alone).
 */
export const resendEvent = (sql: SqlClient.SqlClient, accountId: string, eventId: string) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const rows = yield* sql`
      UPDATE webhook_events SET status = 'pending', failures = 0, resent_from = attempts,
        next_attempt_at = ${now}, completed_at = NULL, lease_owner = NULL, lease_expires_at = NULL
      WHERE id = ${eventId} AND account_id = ${accountId} AND status IN ('failed', 'skipped')
      RETURNING id`
    if (rows.length === 0) return false
    yield* sql`SELECT pg_notify(${EVENTS_CHANNEL}, ${eventId})`
    return true
  }).pipe(Effect.orDie, Effect.withSpan("Webhooks.resendEvent"))
