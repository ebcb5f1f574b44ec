import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * How many tasks wait upstream on a channel (due or not, held or not): what a
 * paced poller divides its budget among (the `tasks_waiting` index).
 */
export const countWaiting = (sql: SqlClient.SqlClient, channel: string) =>
  Effect.map(
    sql<{ n: number | string }>`
      SELECT count(*) AS n FROM tasks WHERE run_state IN ('waiting', 'polling') AND channel = ${channel}`,
    (rows) => Number(rows[0]?.n ?? 0)
  )
