import type { SqlClient } from "@effect/sql"

/**
 * The next poll of many waiting tasks of one attempt number at the same
 * `runAt` (ms), counting the poll: one statement for a batch of unchanged
 * answers instead of one per task.
 */
export const reschedulePolls = (
  sql: SqlClient.SqlClient,
  attempt: number,
  ids: ReadonlyArray<string>,
  runAt: number
) =>
  sql`
    UPDATE tasks SET run_at = ${runAt}, polls = polls + 1
    WHERE ${sql.in("id", ids)} AND attempt = ${attempt} AND status = 'in_progress' AND run_state = 'waiting'`
