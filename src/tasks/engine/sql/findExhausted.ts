import type { SqlClient } from "@effect/sql"
import type { ClaimRow } from "../Claim.ts"

/** Running tasks whose lease ended before `now` (ms) with every attempt spent: the reaper fails them with their refund. */
export const findExhausted = (sql: SqlClient.SqlClient, now: number, maxAttempts: number) =>
  sql<ClaimRow>`
    SELECT id, account_id, kind, model, channel, request, request_version, attempt, trace_context, created_at FROM tasks
    WHERE status = 'in_progress' AND run_state = 'running' AND lease_expires_at < ${now} AND attempt >= ${maxAttempts}`
