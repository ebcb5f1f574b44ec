import type { SqlClient } from "@effect/sql"
import { type Claim, ownedBy } from "../Claim.ts"

/**
 * A polled task held until `until` (ms) while its results download: still
 * `polling`, so no callback moves it. Only while it is `polling`: a hold
 * extended just after the poll's outcome was written must not undo it.
 */
export const holdPoll = (sql: SqlClient.SqlClient, claim: Pick<Claim, "id" | "attempt">, until: number) =>
  sql`UPDATE tasks SET run_at = ${until} WHERE ${ownedBy(sql, claim)} AND run_state = 'polling'`
