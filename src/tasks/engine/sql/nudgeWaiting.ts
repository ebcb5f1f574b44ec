import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { CallbackHint } from "../../../channel/contract/Callbacks.ts"

/**
 * An upstream callback named these tasks of the channel: the waiting ones
 * are due now. One a poller holds (`polling`) keeps its hold and is marked
 * `nudged`, so its poll reschedules it at once (reschedulePoll.ts); moving
 * its `run_at` would let a second poller take it mid-poll. Nothing else
 * changes: no state, no progress, no result. The notification wakes the
 * channel's pollers, here and on other replicas, at commit.
 */
export const nudgeWaiting = (
  sql: SqlClient.SqlClient,
  notifyChannel: string,
  channel: string,
  hint: CallbackHint,
  now: number
) =>
  sql.withTransaction(Effect.gen(function*() {
    const rows = yield* sql<{ id: string }>`
      UPDATE tasks SET run_at = CASE WHEN run_state = 'polling' THEN run_at ELSE LEAST(run_at, ${now}::bigint) END,
        nudged = run_state = 'polling'
      WHERE run_state IN ('waiting', 'polling') AND channel = ${channel}
        AND (${sql.in("upstream_id", [...hint.upstreamIds])} OR ${sql.in("id", [...hint.taskIds])})
      RETURNING id`
    if (rows.length > 0) yield* sql`SELECT pg_notify(${notifyChannel}, ${channel})`
    return rows
  }))
