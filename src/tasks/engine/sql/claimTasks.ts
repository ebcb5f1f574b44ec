import type { SqlClient } from "@effect/sql"
import type { ClaimRow } from "../Claim.ts"

/**
 * Claims up to `limit` queued tasks of a channel, oldest first, with
 * `FOR UPDATE SKIP LOCKED` so concurrent workers never take the same task:
 * each becomes `in_progress` under a new attempt number and a lease held by
 * `workerId` until `now + leaseMs`.
 */
export const claimTasks = (
  sql: SqlClient.SqlClient,
  { channel, leaseMs, limit, now, workerId }: {
    readonly channel: string
    readonly workerId: string
    readonly limit: number
    readonly now: number
    readonly leaseMs: number
  }
) =>
  sql<ClaimRow>`
    UPDATE tasks
    SET status = 'in_progress', run_state = 'running', run_at = NULL, attempt = attempt + 1, lease_owner = ${workerId},
        lease_expires_at = ${now + leaseMs}, started_at = ${Math.floor(now / 1000)},
        updated_at = ${Math.floor(now / 1000)}
    WHERE id IN (
      SELECT id FROM tasks WHERE status = 'queued' AND channel = ${channel}
      ORDER BY seq LIMIT ${limit}
      FOR UPDATE SKIP LOCKED)
    RETURNING id, account_id, kind, model, channel, request, request_version, attempt, trace_context, created_at`
