import type { SqlClient } from "@effect/sql"
import { type Claim, ownedBy } from "../Claim.ts"

/**
 * A running claim whose submit the upstream accepted becomes `waiting`: the
 * lease is dropped (no fiber holds it), the upstream id and model are kept
 * and the first poll is due at `runAt` (ms); a poll of an earlier attempt
 * (on another channel) is forgotten. Public status stays `in_progress`.
 */
export const waitUpstream = (
  sql: SqlClient.SqlClient,
  claim: Claim,
  upstream: { readonly id: string; readonly model: string; readonly runAt: number },
  now: number
) =>
  sql`
    UPDATE tasks SET run_state = 'waiting', run_at = ${upstream.runAt}, upstream_id = ${upstream.id},
      upstream_model = ${upstream.model}, submitted_at = ${now}, polls = 0, polled_at = NULL,
      lease_owner = NULL, lease_expires_at = NULL, updated_at = ${Math.floor(now / 1000)}
    WHERE ${ownedBy(sql, claim)} AND run_state = 'running' RETURNING id`
