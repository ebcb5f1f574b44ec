import type { SqlClient } from "@effect/sql"

/**
 * Earlier attempts of a task that started a submit and never learnt its fate
 * (the process stopped or crashed mid-submit): the upstream may hold the task.
 */
export const findUnresolvedSubmit = (sql: SqlClient.SqlClient, taskId: string, attempt: number) =>
  sql<{ attempt: number }>`
    SELECT attempt FROM task_attempts WHERE task_id = ${taskId} AND attempt < ${attempt} AND outcome = 'submitting'`
