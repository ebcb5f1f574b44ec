import type { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import type { TaskRow } from "./TaskRow.ts"

/** The whole stored row of a task: the public object's fields plus the request and the engine's columns. */
export type TaskRecord = TaskRow & {
  readonly kind: "video" | "image"
  readonly request: unknown
  readonly channel: string
  readonly attempt: number
  readonly charged_wallet_micros: number
  readonly charged_subscription_micros: number
  readonly refunded_at: number | null
  readonly [column: string]: unknown
}

/** One task of an account, either kind, with every column (the console's task page). */
export const findTaskRecord = (sql: SqlClient.SqlClient, accountId: string, id: string) =>
  sql<TaskRecord>`SELECT * FROM tasks WHERE id = ${id} AND account_id = ${accountId}`.pipe(
    Effect.map((rows) => Option.fromNullable(rows[0])),
    Effect.orDie
  )
