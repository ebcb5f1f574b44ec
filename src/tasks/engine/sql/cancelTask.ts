import type { SqlClient } from "@effect/sql"
import type { TaskFailure } from "../../TaskFailure.ts"
import type { TaskRow } from "../../TaskRow.ts"

/** The state a cancel was decided on: the task is ended only if it is still in it. */
export interface CancelGuard {
  readonly id: string
  readonly attempt: number
  /** The engine states the decision holds for (`waiting` and `polling` are one: a poll has no side effect). */
  readonly runStates: ReadonlyArray<"available" | "running" | "waiting" | "polling">
}

/**
 * Ends a task that a cancel (or its deadline) stopped: `failed`, marked
 * refunded in the same statement, as failTask does for a claim. Guarded by
 * the attempt and state the cancel was decided on, so a claim, a completion
 * or another cancel that came first leaves no row: exactly one terminal state
 * and one refund, whichever commits first. The row carries what was charged.
 */
export const cancelTask = (sql: SqlClient.SqlClient, guard: CancelGuard, failure: TaskFailure, now: number) =>
  sql<TaskRow & { account_id: string; charged_wallet_micros: number; charged_subscription_micros: number }>`
    UPDATE tasks SET status = 'failed', run_state = 'done', run_at = NULL, error = ${JSON.stringify(failure)}::jsonb,
      result = NULL, completed_at = ${now}, updated_at = ${now}, refunded_at = ${now}, lease_owner = NULL,
      lease_expires_at = NULL
    WHERE id = ${guard.id} AND attempt = ${guard.attempt} AND ${sql.in("run_state", guard.runStates)}
      AND status IN ('queued', 'in_progress') AND refunded_at IS NULL
    RETURNING *`
