import type { SqlClient } from "@effect/sql"
import { type Claim, ownedBy } from "../Claim.ts"

/**
 * A waiting task whose finished result could not be stored: `store_since`
 * records the first such failure (kept by later ones), from which the outage
 * grace counts. Returns it; no row for a stale claim.
 */
export const markStoreWait = (sql: SqlClient.SqlClient, claim: Pick<Claim, "id" | "attempt">, now: number) =>
  sql<{ store_since: number }>`
    UPDATE tasks SET store_since = COALESCE(store_since, ${now})
    WHERE ${ownedBy(sql, claim)} AND run_state IN ('waiting', 'polling') RETURNING store_since`
