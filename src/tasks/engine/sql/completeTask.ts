import type { SqlClient } from "@effect/sql"
import type { TaskRow } from "../../TaskRow.ts"
import { type Claim, ownedBy } from "../Claim.ts"

/** The claim's task `succeeded` with its result, lease dropped; no row back for a stale claim. */
export const completeTask = (sql: SqlClient.SqlClient, claim: Claim, result: unknown, now: number) =>
  sql<TaskRow>`
    UPDATE tasks SET status = 'succeeded', run_state = 'done', run_at = NULL, progress = 100, result = ${
    JSON.stringify(result)
  }::jsonb,
      completed_at = ${now}, updated_at = ${now}, lease_owner = NULL, lease_expires_at = NULL
    WHERE ${ownedBy(sql, claim)} RETURNING *`
