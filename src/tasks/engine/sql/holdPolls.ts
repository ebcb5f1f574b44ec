import type { SqlClient } from "@effect/sql"

/**
 * Renews the poller's hold of tasks it took and has not finished asking
 * about (a pass paced by the channel's request budget can outlast one hold):
 * only while they are still `polling`, so a task already rescheduled, or
 * ended, is left alone.
 */
export const holdPolls = (sql: SqlClient.SqlClient, ids: ReadonlyArray<string>, until: number) =>
  sql`UPDATE tasks SET run_at = ${until} WHERE ${sql.in("id", ids)} AND run_state = 'polling' AND run_at < ${until}`
