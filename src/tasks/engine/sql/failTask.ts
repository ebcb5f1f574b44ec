import type { SqlClient } from "@effect/sql"
import type { TaskFailure } from "../../TaskFailure.ts"
import type { TaskRow } from "../../TaskRow.ts"
import { type Claim, ownedBy } from "../Claim.ts"

/**
 * The claim's task `failed` and marked refunded in the same statement, so a
 * second refund is impossible (`refunded_at IS NULL`); the row carries what
 * was charged, for the caller to refund. No row back for a stale claim.
 */
export const failTask = (sql: SqlClient.SqlClient, claim: Claim, failure: TaskFailure, now: number) =>
  sql<TaskRow & { charged_wallet_micros: number; charged_subscription_micros: number }>`
    UPDATE tasks SET status = 'failed', run_state = 'done', run_at = NULL, error = ${
    JSON.stringify(failure)
  }::jsonb, result = NULL,
      completed_at = ${now}, updated_at = ${now}, refunded_at = ${now}, lease_owner = NULL, lease_expires_at = NULL
    WHERE ${ownedBy(sql, claim)} AND refunded_at IS NULL RETURNING *`
