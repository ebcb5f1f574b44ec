import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import type { ClaimRow } from "../Claim.ts"

/**
 * Claims up to `limit` queued tasks of a channel, oldest first, without taking
 * the channel past `concurrency` tasks in flight (running here or waiting
 * upstream) across every replica, since upstream accounts cap their concurrent
 * tasks (`concurrency`, docs/adapters/README.md). Each becomes `in_progress`
 * under a new attempt number and a lease held by `workerId` until
 * `now + leaseMs`. A task past its `Cancel-After` deadline is not claimed: the
 * deadline sweep (Deadlines.ts) ends it.
 *
 * Counting and claiming in one statement would race between replicas (each
 * counts from a snapshot taken before the other's claim commits), so the
 * channel is locked for the transaction first: the claim statement that
 * follows takes a fresh snapshot, which sees every earlier claim. The lock
 * is held only for the claim itself. `FOR UPDATE SKIP LOCKED` still keeps
 * two claims from taking the same row.
 */
export const claimTasks = (
  sql: SqlClient.SqlClient,
  { channel, concurrency, leaseMs, limit, now, workerId }: {
    readonly channel: string
    readonly concurrency: number
    readonly workerId: string
    readonly limit: number
    readonly now: number
    readonly leaseMs: number
  }
) =>
  Effect.zipRight(
    sql`SELECT pg_advisory_xact_lock(hashtextextended(${`tasks.channel:${channel}`}, 0))`,
    sql<ClaimRow>`
      UPDATE tasks
      SET status = 'in_progress', run_state = 'running', run_at = NULL, attempt = attempt + 1, lease_owner = ${workerId},
          lease_expires_at = ${now + leaseMs}, started_at = ${Math.floor(now / 1000)},
          updated_at = ${Math.floor(now / 1000)}
      WHERE id IN (
        SELECT id FROM tasks WHERE status = 'queued' AND channel = ${channel} AND (cancel_at IS NULL OR cancel_at > ${now})
        ORDER BY seq
        LIMIT GREATEST(0, LEAST(${limit}::int, ${concurrency}::int - (
          SELECT count(*)::int FROM tasks WHERE channel = ${channel} AND run_state IN ('running', 'waiting', 'polling'))))
        FOR UPDATE SKIP LOCKED)
      RETURNING id, account_id, kind, model, channel, request, request_version, attempt, trace_context, created_at`
  ).pipe(sql.withTransaction)
