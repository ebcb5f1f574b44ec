import type { SqlClient } from "@effect/sql"
import { Clock, Effect } from "effect"

/**
 * The account's events held while its webhook was disabled for failing,
 * due at once as a new round of attempts (same ids and payloads): the
 * webhook is enabled again. How many.
 */
export const releaseHeld = (sql: SqlClient.SqlClient, accountId: string) =>
  Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const rows = yield* sql`
      UPDATE webhook_events SET status = 'pending', failures = 0, resent_from = attempts, next_attempt_at = ${now},
        completed_at = NULL, lease_owner = NULL, lease_expires_at = NULL
      WHERE account_id = ${accountId} AND status = 'held'
      RETURNING id`
    return rows.length
  })
