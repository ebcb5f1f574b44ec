import type { SqlClient } from "@effect/sql"
import { type Claim, ownedBy } from "../Claim.ts"

/** A `storing` task's next try at `runAt` (ms). */
export const rescheduleStore = (sql: SqlClient.SqlClient, claim: Pick<Claim, "id" | "attempt">, runAt: number) =>
  sql`UPDATE tasks SET run_at = ${runAt} WHERE ${ownedBy(sql, claim)} AND run_state = 'storing'`
