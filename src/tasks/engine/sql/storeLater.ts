import type { SqlClient } from "@effect/sql"
import { type Claim, ownedBy } from "../Claim.ts"
import type { SpoolRecord } from "../ResultSpool.ts"

/**
 * A running claim whose result exists but could not be stored becomes
 * `storing`: lease dropped (no fiber holds it), its spooled outputs recorded,
 * the next try at `runAt` (ms). `store_since` keeps the first failure, from
 * which the outage grace counts. Public status stays `in_progress`.
 */
export const storeLater = (
  sql: SqlClient.SqlClient,
  claim: Claim,
  spool: { readonly id: string; readonly record: SpoolRecord; readonly runAt: number },
  now: number
) =>
  sql`
    UPDATE tasks SET run_state = 'storing', run_at = ${spool.runAt}, spool_id = ${spool.id},
      spool = ${JSON.stringify(spool.record)}::jsonb, store_since = COALESCE(store_since, ${now}),
      lease_owner = NULL, lease_expires_at = NULL, updated_at = ${Math.floor(now / 1000)}
    WHERE ${ownedBy(sql, claim)} AND run_state = 'running' RETURNING id`
