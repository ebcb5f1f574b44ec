import type { SqlClient } from "@effect/sql"
import { type Claim, ownedBy } from "../Claim.ts"

/** A waiting task's next poll at `runAt` (ms), counting the polls for the backoff. */
export const reschedulePoll = (sql: SqlClient.SqlClient, claim: Pick<Claim, "id" | "attempt">, runAt: number) =>
  sql`
    UPDATE tasks SET run_at = ${runAt}, polls = polls + 1
    WHERE ${ownedBy(sql, claim)} AND run_state = 'waiting'`
