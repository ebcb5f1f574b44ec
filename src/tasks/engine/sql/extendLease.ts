import type { SqlClient } from "@effect/sql"
import { type Claim, ownedBy } from "../Claim.ts"

/** The heartbeat: moves the lease's end to `until` (ms); no row back when the claim was taken away. */
export const extendLease = (sql: SqlClient.SqlClient, claim: Claim, until: number) =>
  sql`
    UPDATE tasks SET lease_expires_at = ${until}
    WHERE ${ownedBy(sql, claim)} AND run_state = 'running' RETURNING id`
