import type { SqlClient } from "@effect/sql"
import { type Claim, ownedBy } from "../Claim.ts"

/** Progress only rises (capped at 99 until the result is stored), and only while the claim holds. */
export const setProgress = (sql: SqlClient.SqlClient, claim: Claim, percent: number, now: number) =>
  sql`
    UPDATE tasks SET progress = ${Math.max(0, Math.min(99, Math.floor(percent)))}, updated_at = ${
    Math.floor(now / 1000)
  }
    WHERE ${ownedBy(sql, claim)} AND progress < ${Math.floor(percent)}`
