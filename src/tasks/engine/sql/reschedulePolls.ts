import type { SqlClient } from "@effect/sql"

/**
 * The next poll of many waiting tasks of one attempt number at the same
 * `runAt` (ms), counting the poll and releasing the poller's hold: one
 * statement for a batch of unchanged answers instead of one per task. As in
 * reschedulePoll.ts, a task a callback named while it was polled is due at
 * `earliest` instead, and `polledAt` is when the poll was sent.
 */
export const reschedulePolls = (
  sql: SqlClient.SqlClient,
  attempt: number,
  ids: ReadonlyArray<string>,
  runAt: number,
  earliest: number,
  polledAt: number
) =>
  sql`
    UPDATE tasks SET run_at = CASE WHEN nudged THEN LEAST(${runAt}::bigint, ${earliest}::bigint) ELSE ${runAt} END,
      polls = polls + 1, run_state = 'waiting', nudged = false, polled_at = ${polledAt}
    WHERE ${sql.in("id", ids)} AND attempt = ${attempt} AND status = 'in_progress'
      AND run_state IN ('waiting', 'polling')`
