import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer, Stream } from "effect"
import type { TaskKind } from "../Task.ts"
import { AppConfig } from "../../platform/AppConfig.ts"
import { makeListen } from "../../platform/Notifications.ts"

/** The NOTIFY channel a create signals on; the payload is the task's channel. */
export const QUEUED_CHANNEL = "tasks_queued"

/** What a worker holds after a claim: the task and the attempt its writes are guarded by. */
export interface Claim {
  readonly id: string
  readonly accountId: string
  readonly kind: TaskKind
  readonly model: string
  readonly request: any
  readonly attempt: number
  readonly traceContext: { readonly traceparent?: string } | null
  readonly createdAt: number
}

interface ClaimRow {
  readonly id: string
  readonly account_id: string
  readonly kind: TaskKind
  readonly model: string
  readonly request: any
  readonly attempt: number
  readonly trace_context: Claim["traceContext"]
  readonly created_at: number
}

const toClaim = (row: ClaimRow): Claim => ({
  id: row.id,
  accountId: row.account_id,
  kind: row.kind,
  model: row.model,
  request: row.request,
  attempt: row.attempt,
  traceContext: row.trace_context,
  createdAt: row.created_at
})

/** The claim's guard: this task, this attempt, still running. A stale worker's write matches nothing. */
export const ownedBy = (sql: SqlClient.SqlClient, claim: Pick<Claim, "id" | "attempt">) =>
  sql`id = ${claim.id} AND attempt = ${claim.attempt} AND status = 'in_progress'`

/**
 * The durable queue on the task table (DESIGN.md, Task engine). A queued row
 * is claimed with `FOR UPDATE SKIP LOCKED`, so concurrent workers never take
 * the same task; the claim starts a lease that heartbeats extend, and expired
 * leases are taken back by the reaper.
 */
const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const { limits } = yield* AppConfig
  const listen = yield* makeListen
  const leaseMs = limits.engine.lease_s * 1000

  const claim = (channel: string, workerId: string, limit: number) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* sql<ClaimRow>`
        UPDATE tasks
        SET status = 'in_progress', attempt = attempt + 1, lease_owner = ${workerId},
            lease_expires_at = ${now + leaseMs}, started_at = ${Math.floor(now / 1000)},
            updated_at = ${Math.floor(now / 1000)}
        WHERE id IN (
          SELECT id FROM tasks WHERE status = 'queued' AND channel = ${channel}
          ORDER BY seq LIMIT ${limit}
          FOR UPDATE SKIP LOCKED)
        RETURNING id, account_id, kind, model, request, attempt, trace_context, created_at`
      return rows.map(toClaim)
    }).pipe(Effect.orDie)

  /** Extends the lease; false when the claim was taken back (the worker must stop). */
  const heartbeat = (claim: Claim) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* sql`
        UPDATE tasks SET lease_expires_at = ${now + leaseMs}
        WHERE ${ownedBy(sql, claim)} RETURNING id`
      return rows.length === 1
    }).pipe(Effect.orDie)

  /** Progress only rises, and only while the claim holds. */
  const progress = (claim: Claim, percent: number) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      yield* sql`
        UPDATE tasks SET progress = ${Math.max(0, Math.min(99, Math.floor(percent)))}, updated_at = ${Math.floor(now / 1000)}
        WHERE ${ownedBy(sql, claim)} AND progress < ${Math.floor(percent)}`
    }).pipe(Effect.orDie)

  /** Puts a claimed task back in the queue (a worker shutting down); its next claim is a new attempt. */
  const release = (claim: Claim) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      yield* sql`
        UPDATE tasks SET status = 'queued', progress = 0, started_at = NULL, lease_owner = NULL,
          lease_expires_at = NULL, updated_at = ${Math.floor(now / 1000)}
        WHERE ${ownedBy(sql, claim)}`
    }).pipe(Effect.orDie)

  /**
   * Takes back every lease that expired (its worker crashed or stalled): a
   * task with attempts left goes back to `queued`; the others are returned for
   * the caller to fail with their refund.
   */
  const reapExpired = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const requeued = yield* sql<{ id: string; channel: string }>`
      UPDATE tasks SET status = 'queued', progress = 0, started_at = NULL, lease_owner = NULL,
        lease_expires_at = NULL, updated_at = ${Math.floor(now / 1000)}
      WHERE status = 'in_progress' AND lease_expires_at < ${now} AND attempt < ${limits.engine.max_attempts}
      RETURNING id, channel`
    const exhausted = yield* sql<ClaimRow>`
      SELECT id, account_id, kind, model, request, attempt, trace_context, created_at FROM tasks
      WHERE status = 'in_progress' AND lease_expires_at < ${now} AND attempt >= ${limits.engine.max_attempts}`
    return { requeued, exhausted: exhausted.map(toClaim) }
  }).pipe(Effect.orDie)

  /** Signals idle workers; inside a transaction it is delivered at commit. */
  const notify = (channel: string) => sql`SELECT pg_notify(${QUEUED_CHANNEL}, ${channel})`.pipe(Effect.asVoid)

  /**
   * NOTIFY wake-ups for a channel. A hint only: workers also poll, so a lost listener delays work, never loses it.
   * On PostgreSQL the stream fails when its connection is lost (the caller listens again); PGlite is in-process.
   */
  const wakeups = (channel: string) => listen(QUEUED_CHANNEL).pipe(Stream.filter((payload) => payload === channel))

  return { claim, heartbeat, progress, release, reapExpired, notify, wakeups } as const
})

export class TaskQueue extends Context.Tag("TaskQueue")<TaskQueue, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(TaskQueue, make)
}
