import type { SqlClient } from "@effect/sql"

/** Queued tasks of a channel, oldest first: what a disabled channel hands on to its models' next channels. */
export const queuedOn = (sql: SqlClient.SqlClient, channel: string, limit: number) =>
  sql<
    { id: string; kind: "video" | "image"; model: string; attempt: number; request: unknown; request_version: number }
  >`
    SELECT id, kind, model, attempt, request, request_version FROM tasks
    WHERE status = 'queued' AND channel = ${channel} ORDER BY seq LIMIT ${limit}`

/**
 * One queued task moved from a disabled channel to `next`, counted as an
 * attempt (on the disabled channel, ended by failover) so the operator's view
 * lists the move; guarded by its attempt number, so a claim that took it
 * meanwhile wins.
 */
export const moveQueued = (
  sql: SqlClient.SqlClient,
  task: { readonly id: string; readonly attempt: number },
  from: string,
  next: string,
  now: number
) =>
  sql<{ id: string }>`
    UPDATE tasks SET channel = ${next}, attempt = attempt + 1, updated_at = ${Math.floor(now / 1000)}
    WHERE id = ${task.id} AND status = 'queued' AND channel = ${from} AND attempt = ${task.attempt}
    RETURNING id`
