import type { SqlClient } from "@effect/sql"

/** Unfinished tasks whose `Cancel-After` deadline passed before `now` (ms), earliest first (the partial index). */
export const dueDeadlines = (sql: SqlClient.SqlClient, now: number, limit: number) =>
  sql<{ id: string }>`
    SELECT id FROM tasks WHERE cancel_at IS NOT NULL AND cancel_at <= ${now} AND run_state <> 'done'
    ORDER BY cancel_at LIMIT ${limit}`

/**
 * A deadline the engine cannot act on (the upstream cannot cancel, or refused):
 * dropped, so the task runs on to its normal end and the sweep stops looking.
 */
export const dropDeadline = (sql: SqlClient.SqlClient, id: string) =>
  sql`UPDATE tasks SET cancel_at = NULL WHERE id = ${id}`
