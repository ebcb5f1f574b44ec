import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { Accounts } from "../accounts/Accounts.ts"
import { ledgerOfTask } from "../billing/LedgerQuery.ts"
import { TaskNotFound } from "./Errors.ts"
import { type TaskRow, toTaskObject } from "./TaskRow.ts"

/**
 * The operator's view of one task (docs/operating.md, The admin API): the task
 * object as its caller sees it, plus what a caller never sees — its account,
 * its charge and refund, the engine's run state, every attempt with its
 * channel, upstream id and the upstream's last answer. Served only on the admin
 * API.
 */

interface EngineRow {
  readonly account_id: string
  readonly redacted_at: number | string | null
  readonly channel: string
  readonly attempt: number
  readonly run_state: string
  readonly run_at: number | null
  readonly upstream_id: string | null
  readonly upstream_model: string | null
  readonly submitted_at: number | null
  readonly polls: number
  readonly lease_owner: string | null
  readonly store_since: number | null
  readonly spool_id: string | null
}

interface AttemptRow {
  readonly attempt: number
  readonly channel: string
  readonly upstream_id: string | null
  readonly outcome: string
  readonly last_answer: unknown
  readonly upstream_status: number | null
  readonly upstream_code: string | null
  readonly upstream_message: string | null
  readonly usage: Record<string, unknown> | null
  readonly cost_micros: number | string | null
  readonly billed: boolean | null
  readonly upstream_forget: "pending" | "deleted" | "failed" | null
  readonly created_at: number
  readonly updated_at: number
}

export const taskAudit = (taskId: string) =>
  Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const accounts = yield* Accounts
    const [row] = yield* sql<TaskRow & EngineRow>`SELECT * FROM tasks WHERE id = ${taskId}`
    if (row === undefined) return yield* new TaskNotFound({ message: "No such task." })
    const attempts = yield* sql<AttemptRow>`
      SELECT attempt, channel, upstream_id, outcome, last_answer, upstream_status, upstream_code, upstream_message,
        usage, cost_micros, billed, upstream_forget, created_at, updated_at
      FROM task_attempts WHERE task_id = ${taskId} ORDER BY attempt`
    const account = yield* accounts.detail(row.account_id).pipe(Effect.option)
    return {
      object: "admin.task" as const,
      task: toTaskObject(row),
      account: Option.getOrNull(account),
      ledger: yield* ledgerOfTask(sql, row.account_id, taskId),
      engine: {
        run_state: row.run_state,
        channel: row.channel,
        attempt: row.attempt,
        run_at: row.run_at === null ? null : Number(row.run_at),
        upstream_id: row.upstream_id,
        upstream_model: row.upstream_model,
        submitted_at: row.submitted_at === null ? null : Number(row.submitted_at),
        polls: row.polls,
        lease_owner: row.lease_owner,
        store_since: row.store_since === null ? null : Number(row.store_since),
        spool_id: row.run_state === "storing" ? row.spool_id : null,
        redacted_at: row.redacted_at === null ? null : Number(row.redacted_at)
      },
      channels_tried: [...new Set(attempts.map((a) => a.channel))],
      attempts: attempts.map((a) => ({
        attempt: a.attempt,
        channel: a.channel,
        upstream_id: a.upstream_id,
        outcome: a.outcome,
        upstream: a.upstream_status === null && a.upstream_code === null && a.upstream_message === null
          ? null
          : { status: a.upstream_status, code: a.upstream_code, message: a.upstream_message },
        last_answer: a.last_answer ?? null,
        usage: a.usage,
        // Micro-units as stored, in the operator's money units as credits are shown.
        cost: a.cost_micros === null ? null : Number(a.cost_micros) / 1_000_000,
        billed: a.billed,
        provider_copy: a.upstream_forget,
        created_at: Number(a.created_at),
        updated_at: Number(a.updated_at)
      }))
    }
  }).pipe(
    Effect.catchTag("SqlError", Effect.die),
    Effect.withSpan("TaskAudit.get", { attributes: { "task.id": taskId } })
  )
