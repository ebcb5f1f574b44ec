import type { SqlClient } from "@effect/sql"
import type { StoringRow } from "../Claim.ts"

/**
 * Takes up to `limit` due `storing` tasks, held for `holdMs` while they are
 * tried (`run_at` moves: a process that dies mid-try leaves them due again
 * later). Those in this process's spool are tried; any other whose grace has
 * run out is taken too, to be failed with its refund (its spool is on a host
 * that is gone, or it would have been stored by now).
 */
export const claimStoring = (
  sql: SqlClient.SqlClient,
  { graceMs, holdMs, limit, now, spoolId }: {
    readonly spoolId: string
    readonly limit: number
    readonly now: number
    readonly holdMs: number
    readonly graceMs: number
  }
) =>
  sql<StoringRow>`
    UPDATE tasks SET run_at = ${now + holdMs}
    WHERE id IN (
      SELECT id FROM tasks WHERE run_state = 'storing' AND run_at <= ${now}
        AND (spool_id = ${spoolId} OR store_since < ${now - graceMs})
      ORDER BY run_at LIMIT ${limit}
      FOR UPDATE SKIP LOCKED)
    RETURNING id, account_id, kind, model, channel, request, request_version, attempt, trace_context, created_at,
      spool_id, spool, store_since`
