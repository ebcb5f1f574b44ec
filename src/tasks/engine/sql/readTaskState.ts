import type { SqlClient } from "@effect/sql"
import { Schema } from "effect"
import { TaskKind } from "../../Task.ts"

/** What deciding a cancel needs of a task: its state, the attempt that state belongs to and its upstream. */
export const TaskState = Schema.Struct({
  id: Schema.String,
  account_id: Schema.String,
  kind: TaskKind,
  status: Schema.Literal("queued", "in_progress", "succeeded", "failed"),
  run_state: Schema.Literal("available", "running", "waiting", "polling", "storing", "done"),
  channel: Schema.String,
  attempt: Schema.Number,
  upstream_id: Schema.NullOr(Schema.String),
  error_code: Schema.NullOr(Schema.String),
  /** What a confirmed upstream cancel's cost is priced by (Plans.ts, pricingFor). */
  model: Schema.String,
  request: Schema.Unknown,
  request_version: Schema.Number
})
export type TaskState = typeof TaskState.Type

const COLUMNS =
  "id, account_id, kind, status, run_state, channel, attempt, upstream_id, error->>'code' AS error_code, model, " +
  "request, request_version"

/** The task of this account and kind, or none (unknown, or another account's: the same answer). */
export const readOwnTaskState = (sql: SqlClient.SqlClient, accountId: string, kind: TaskKind, id: string) =>
  sql`SELECT ${sql.literal(COLUMNS)} FROM tasks WHERE id = ${id} AND account_id = ${accountId} AND kind = ${kind}`

/** The task, whoever owns it (the deadline sweep). */
export const readTaskState = (sql: SqlClient.SqlClient, id: string) =>
  sql`SELECT ${sql.literal(COLUMNS)} FROM tasks WHERE id = ${id}`
