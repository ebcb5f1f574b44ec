import type { SqlClient } from "@effect/sql"

/** Running tasks whose lease ended before `now` (ms) and that have attempts left go back to `queued`.
 * Waiting tasks hold no lease and are never requeued: they were submitted upstream. */
export const requeueExpired = (sql: SqlClient.SqlClient, now: number, maxAttempts: number) =>
  sql<{ id: string; channel: string }>`
    UPDATE tasks SET status = 'queued', run_state = 'available', progress = 0, started_at = NULL, lease_owner = NULL,
      lease_expires_at = NULL, updated_at = ${Math.floor(now / 1000)}
    WHERE status = 'in_progress' AND run_state = 'running' AND lease_expires_at < ${now} AND attempt < ${maxAttempts}
    RETURNING id, channel`
