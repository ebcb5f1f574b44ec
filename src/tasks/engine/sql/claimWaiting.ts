import type { SqlClient } from "@effect/sql"
import type { WaitingRow } from "../Claim.ts"

/**
 * Takes up to `limit` waiting tasks of a channel whose poll is due, with
 * `FOR UPDATE SKIP LOCKED` so replicas split them. Moving `run_at` to
 * `now + holdMs` is the poller's lease: if it dies mid-poll the tasks are
 * simply due again later (a poll has no side effect upstream). The state `polling`
 * tells a callback that `run_at` is a hold now (nudgeWaiting.ts).
 */
export const claimWaiting = (
  sql: SqlClient.SqlClient,
  { channel, holdMs, limit, now }: {
    readonly channel: string
    readonly limit: number
    readonly now: number
    readonly holdMs: number
  }
) =>
  sql<WaitingRow>`
    UPDATE tasks SET run_at = ${now + holdMs}, run_state = 'polling', nudged = false
    WHERE id IN (
      SELECT id FROM tasks WHERE run_state IN ('waiting', 'polling') AND channel = ${channel} AND run_at <= ${now}
      ORDER BY run_at LIMIT ${limit}
      FOR UPDATE SKIP LOCKED)
    RETURNING id, account_id, kind, model, channel, request, request_version, attempt, trace_context, created_at,
      upstream_id, upstream_model, submitted_at, polls, store_since, polled_at`
