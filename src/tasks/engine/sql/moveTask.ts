import type { SqlClient } from "@effect/sql"
import { type Claim, ownedBy } from "../Claim.ts"

/**
 * Failover: a running claim goes back to the queue on another channel of its
 * model, as if never started; that channel's workers claim it as a new
 * attempt. Guarded like every write of a claim.
 */
export const moveTask = (sql: SqlClient.SqlClient, claim: Claim, channel: string, now: number) =>
  sql<{ id: string }>`
    UPDATE tasks SET channel = ${channel}, status = 'queued', run_state = 'available', progress = 0,
      started_at = NULL, lease_owner = NULL, lease_expires_at = NULL, updated_at = ${Math.floor(now / 1000)}
    WHERE ${ownedBy(sql, claim)} AND run_state = 'running'
    RETURNING id`
