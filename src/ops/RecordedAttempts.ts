import type { SqlClient } from "@effect/sql"

/** An attempt of a channel that reached its provider, as a reconciliation compares it. */
export interface RecordedAttempt {
  readonly task_id: string
  readonly attempt: number
  readonly upstream_id: string
  readonly outcome: string
  readonly usage: Record<string, unknown> | null
  readonly cost_micros: number | string | null
  readonly billed: boolean | null
  readonly created_at: number
}

const COLUMNS = "task_id, attempt, upstream_id, outcome, usage, cost_micros, billed, created_at"

/** The channel's attempts with an upstream id created in `[from, to)` (Unix seconds), through task_attempts_created. */
export const attemptsCreated = (sql: SqlClient.SqlClient, channel: string, from: number, to: number) =>
  sql<RecordedAttempt>`
    SELECT ${sql.literal(COLUMNS)} FROM task_attempts
    WHERE created_at >= ${from} AND created_at < ${to} AND channel = ${channel} AND upstream_id IS NOT NULL`

/** The channel's attempts that hold any of these upstream ids, whenever they were created. */
export const attemptsOf = (sql: SqlClient.SqlClient, channel: string, upstreamIds: ReadonlyArray<string>) =>
  sql<RecordedAttempt>`
    SELECT ${sql.literal(COLUMNS)} FROM task_attempts
    WHERE channel = ${channel} AND upstream_id IN ${sql.in(upstreamIds)}`
