import type { SqlClient } from "@effect/sql"
import { type Claim, ownedBy } from "../Claim.ts"

/**
 * A claimed task back to `queued` as if never started (a worker shutting
 * down); its next claim is a new attempt. Only a running claim is released:
 * a task that went waiting upstream stays waiting (releasing it would submit
 * it a second time).
 */
export const releaseTask = (sql: SqlClient.SqlClient, claim: Claim, now: number) =>
  sql`
    UPDATE tasks SET status = 'queued', run_state = 'available', progress = 0, started_at = NULL, lease_owner = NULL,
      lease_expires_at = NULL, updated_at = ${Math.floor(now / 1000)}
    WHERE ${ownedBy(sql, claim)} AND run_state = 'running'`
