import { SqlClient } from "@effect/sql"
import { Clock, Context, Effect, Layer, Schema, Stream } from "effect"
import type { CallbackHint } from "../../channel/contract/Callbacks.ts"
import { AppConfig } from "../../platform/AppConfig.ts"
import { retryingConflicts } from "../../platform/Database.ts"
import { Metrics } from "../../platform/metrics/Metrics.ts"
import { makeListen } from "../../platform/Notifications.ts"
import type { GroupsFile } from "../../platform/Settings.ts"
import { notifyQueued, QUEUED_CHANNEL } from "../sql/notifyQueued.ts"
import { type Claim, ClaimRow, StoringRow, toClaim, WaitingRow } from "./Claim.ts"
import { type Lane, planClaims, type Shares } from "./FairShare.ts"
import type { SpoolRecord } from "./ResultSpool.ts"
import { claimStoring } from "./sql/claimStoring.ts"
import { activeLanes, claimOldest, claimPlanned, type LaneRow, lockChannel } from "./sql/claimTasks.ts"
import { claimWaiting } from "./sql/claimWaiting.ts"
import { countWaiting } from "./sql/countWaiting.ts"
import { dropDeadline, dueDeadlines } from "./sql/dueDeadlines.ts"
import { extendLease } from "./sql/extendLease.ts"
import { findExhausted } from "./sql/findExhausted.ts"
import { findUnresolvedSubmit } from "./sql/findUnresolvedSubmit.ts"
import { holdPoll } from "./sql/holdPoll.ts"
import { holdPolls } from "./sql/holdPolls.ts"
import { holdStoring } from "./sql/holdStoring.ts"
import { markStoreWait } from "./sql/markStoreWait.ts"
import { moveQueued, queuedOn } from "./sql/moveQueued.ts"
import { moveTask } from "./sql/moveTask.ts"
import { nudgeWaiting } from "./sql/nudgeWaiting.ts"
import { type AttemptRecord, recordAttempt } from "./sql/recordAttempt.ts"
import { recordCost } from "./sql/recordCost.ts"
import { releaseTask } from "./sql/releaseTask.ts"
import { requeueExpired } from "./sql/requeueExpired.ts"
import { reschedulePoll } from "./sql/reschedulePoll.ts"
import { reschedulePolls } from "./sql/reschedulePolls.ts"
import { rescheduleStore } from "./sql/rescheduleStore.ts"
import { setProgress } from "./sql/setProgress.ts"
import { spooledTasks } from "./sql/spooledTasks.ts"
import { storeLater } from "./sql/storeLater.ts"
import { waitUpstream } from "./sql/waitUpstream.ts"

/** The NOTIFY channel an upstream callback signals on, waking the pollers; the payload is the task's channel. */
export const NUDGED_CHANNEL = "tasks_nudged"

/** The NOTIFY channel a cancel of a task running in-process signals on; the payload is the task's id. */
export const CANCELLED_CHANNEL = "tasks_cancelled"

/**
 * The rows a claim returns, checked against their schema: a row that does
 * not decode is a defect of ours (a statement and its schema out of step),
 * never a task to run on guesses.
 */
const decoded = <A, I>(schema: Schema.Schema<A, I>) => (rows: ReadonlyArray<unknown>) =>
  Schema.decodeUnknown(Schema.Array(schema))(rows).pipe(Effect.orDie)

/** How a channel shares its slots between accounts (`fair_share` in its settings). */
export type ShareMode = "account" | "group" | "fifo"

/** Each group's weight and in-flight cap, from config/groups.json (weight 1 and no cap unless set). */
const sharesOf = (groups: GroupsFile): Omit<Shares, "by"> => ({
  weightOf: (group) => groups.groups[group]?.weight ?? 1,
  capOf: (group) => groups.groups[group]?.max_in_flight_per_channel
})

/** How long a start counts in a lane's recent service (migration 21, `task_lanes.service`). */
const SERVICE_DECAY_MS = 60_000

/** A lane as the plan reads it, its recent service decayed to `now`. */
const toLane = (row: LaneRow, now: number): Lane => ({
  account: row.account_id,
  group: row.group_name,
  queued: Number(row.queued),
  inFlight: Number(row.in_flight),
  served: row.started_at === null
    ? 0
    : Number(row.service) * Math.exp(-Math.max(0, now - Number(row.started_at)) / SERVICE_DECAY_MS),
  oldest: row.oldest === null ? null : Number(row.oldest)
})

/**
 * The durable queue on the task table (docs/engine.md, Claims, leases and the
 * reaper). A queued row is claimed with `FOR UPDATE SKIP LOCKED`, so concurrent
 * workers never take the same task; the claim starts a lease that heartbeats
 * extend, and expired leases are taken back by the reaper.
 */
const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const { groups, limits } = yield* AppConfig
  const metrics = yield* Metrics
  const listen = yield* makeListen
  const leaseMs = limits.engine.lease_s * 1000
  const shares = sharesOf(groups)

  /**
   * Up to `limit` queued tasks of the channel, never more than `concurrency`
   * in flight on it across replicas, nor an account past its group's
   * `max_in_flight_per_channel`; whose tasks, as `share` says (FairShare.ts).
   */
  const claim = (
    channel: string,
    workerId: string,
    limit: number,
    { concurrency, share = "account" }: { readonly concurrency: number; readonly share?: ShareMode }
  ) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const claiming = { channel, workerId, now, leaseMs }
      const rows = yield* Effect.gen(function*() {
        yield* lockChannel(sql, channel)
        const lanes = (yield* activeLanes(sql, channel)).map((row) => toLane(row, now))
        const slots = Math.min(limit, concurrency - lanes.reduce((n, lane) => n + lane.inFlight, 0))
        if (slots <= 0) return []
        if (share === "fifo") {
          const capped = lanes.filter((l) => l.inFlight >= (shares.capOf(l.group) ?? Infinity)).map((l) => l.account)
          return yield* claimOldest(sql, claiming, slots, capped)
        }
        const plan = planClaims(lanes, slots, { ...shares, by: share })
        return plan.length === 0 ? [] : yield* claimPlanned(sql, claiming, plan)
      }).pipe(sql.withTransaction, retryingConflicts, Effect.flatMap(decoded(ClaimRow)))
      return rows.map(toClaim)
    }).pipe(Effect.orDie, Effect.withSpan("task.claim_queued", { attributes: { "channel.name": channel } }))

  /** Extends the lease; false when the claim was taken back (the worker must stop). */
  const heartbeat = (claim: Claim) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* extendLease(sql, claim, now + leaseMs)
      return rows.length === 1
    }).pipe(Effect.orDie)

  /** Progress only rises, and only while the claim holds. */
  const progress = (claim: Claim, percent: number) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      yield* setProgress(sql, claim, percent, now)
    }).pipe(Effect.orDie)

  /** Puts a claimed task back in the queue (a worker shutting down); its next claim is a new attempt. */
  const release = (claim: Claim) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      yield* releaseTask(sql, claim, now)
    }).pipe(Effect.orDie)

  /**
   * Takes back every lease that expired (its worker crashed or stalled): a
   * task with attempts left goes back to `queued`; the others are returned for
   * the caller to fail with their refund.
   */
  const reapExpired = Effect.gen(function*() {
    const now = yield* Clock.currentTimeMillis
    const requeued = yield* requeueExpired(sql, now, limits.engine.max_attempts)
    const exhausted = yield* findExhausted(sql, now, limits.engine.max_attempts).pipe(Effect.flatMap(decoded(ClaimRow)))
    return { requeued, exhausted: exhausted.map(toClaim) }
  }).pipe(Effect.orDie)

  /** Signals idle workers; inside a transaction it is delivered at commit. */
  const notify = (channel: string) => notifyQueued(sql, channel).pipe(Effect.asVoid)

  /**
   * NOTIFY wake-ups for a channel. A hint only: workers also poll, so a lost listener delays work, never loses it.
   * On PostgreSQL the stream fails when its connection is lost (the caller listens again); PGlite is in-process.
   */
  const wakeups = (channel: string) => listen(QUEUED_CHANNEL).pipe(Stream.filter((payload) => payload === channel))

  /** A submitted task waits upstream: lease dropped, first poll at `runAt`; false for a stale claim. */
  const wait = (claim: Claim, upstream: { readonly id: string; readonly model: string; readonly runAt: number }) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* waitUpstream(sql, claim, upstream, now)
      return rows.length === 1
    }).pipe(Effect.orDie)

  /** Due waiting tasks of a channel, held for `holdMs` while they are polled. */
  const claimDue = (channel: string, limit: number, holdMs: number) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      return yield* claimWaiting(sql, { channel, limit, now, holdMs }).pipe(Effect.flatMap(decoded(WaitingRow)))
    }).pipe(Effect.orDie)

  /**
   * The next poll at `runAt`; at `earliest` instead if a callback named the task while it was polled.
   * `polledAt`: when this poll was sent (absent when none was: a shutdown hands the task on).
   */
  const reschedule = (
    claim: Pick<Claim, "id" | "attempt">,
    runAt: number,
    earliest: number = runAt,
    polledAt?: number
  ) =>
    // Never before `earliest`: a backoff counted from the poll's sending can fall short of a
    // Retry-After counted, as the upstream meant it, from its answer.
    reschedulePoll(sql, claim, Math.max(runAt, earliest), earliest, polledAt ?? null).pipe(
      Effect.asVoid,
      Effect.orDie
    )

  /** Renews the poller's hold of tasks it has not finished asking about, until `until` (ms). */
  const holdMany = (ids: ReadonlyArray<string>, until: number) =>
    ids.length === 0 ? Effect.void : holdPolls(sql, ids, until).pipe(Effect.asVoid, Effect.orDie)

  /** How many tasks wait upstream on a channel, held by a poller or not. */
  const waitingOn = (channel: string) => countWaiting(sql, channel).pipe(Effect.orDie)

  /** Keeps a polled task held until `until` (its results download), beyond the claim's hold. */
  const hold = (claim: Pick<Claim, "id" | "attempt">, until: number) =>
    holdPoll(sql, claim, until).pipe(Effect.asVoid, Effect.orDie)

  /** An upstream callback named these tasks: those waiting on the channel are polled now. How many were. */
  const nudge = (channel: string, hint: CallbackHint) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* nudgeWaiting(sql, NUDGED_CHANNEL, channel, hint, now)
      return rows.length
    }).pipe(Effect.orDie)

  /** Callback wake-ups of a channel's pollers: a hint, like `wakeups`. */
  const nudges = (channel: string) => listen(NUDGED_CHANNEL).pipe(Stream.filter((payload) => payload === channel))

  /** Many tasks' next polls, one statement per attempt number and time; `earliest` for those a callback named. */
  const rescheduleMany = (
    tasks: ReadonlyArray<{ readonly claim: Pick<Claim, "id" | "attempt">; readonly runAt: number }>,
    earliest: number,
    polledAt: number
  ) => {
    const groups = new Map<string, { attempt: number; runAt: number; ids: Array<string> }>()
    for (const { claim, runAt } of tasks) {
      const key = `${claim.attempt}:${runAt}`
      const group = groups.get(key) ?? { attempt: claim.attempt, runAt, ids: [] }
      group.ids.push(claim.id)
      groups.set(key, group)
    }
    return Effect.forEach(groups.values(), (g) => reschedulePolls(sql, g.attempt, g.ids, g.runAt, earliest, polledAt), {
      discard: true
    })
      .pipe(Effect.orDie)
  }

  /** The operator's record of an attempt (task_attempts); never read by callers. */
  const attempt = (record: AttemptRecord) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      yield* recordAttempt(sql, record, Math.floor(now / 1000))
      if (record.cost !== undefined) yield* cost(record, record.cost)
    }).pipe(Effect.orDie)

  /**
   * What an attempt (already recorded) cost at its provider, once known; a later account of the same
   * attempt changes nothing (recordCost.ts).
   */
  const cost = (
    record: Pick<AttemptRecord, "taskId" | "attempt" | "channel">,
    cost: NonNullable<AttemptRecord["cost"]>
  ) =>
    Effect.gen(function*() {
      const [set] = yield* recordCost(sql, record, cost)
      // Counted by the write that set it, so a cost reported by two steps (or two replicas) counts once.
      if (set?.billed && set.cost_micros !== null) {
        metrics.upstreamCost(record.channel, cost.model, Number(set.cost_micros))
      }
    }).pipe(Effect.orDie)

  /** Failover: the claim's task queued again on `channel`; false when the claim no longer holds. */
  const moveTo = (claim: Claim, channel: string) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* moveTask(sql, claim, channel, now)
      if (rows.length === 1) yield* notify(channel)
      return rows.length === 1
    }).pipe(Effect.orDie)

  /** Up to `limit` queued tasks of a channel (a disabled channel hands them on). */
  const queued = (channel: string, limit: number) => queuedOn(sql, channel, limit).pipe(Effect.orDie)

  /** A queued task handed from a disabled channel to `next` as a new attempt; false when a claim took it first. */
  const handOn = (task: { readonly id: string; readonly attempt: number }, from: string, next: string) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* moveQueued(sql, task, from, next, now)
      if (rows.length === 1) yield* notify(next)
      return rows.length === 1
    }).pipe(Effect.orDie)

  /** Whether an earlier attempt of the claim's task was stopped mid-submit (its upstream may hold the task). */
  const submitInDoubt = (claim: Claim) =>
    findUnresolvedSubmit(sql, claim.id, claim.attempt).pipe(Effect.map((rows) => rows.length > 0), Effect.orDie)

  /** A running claim's spooled result waits for object storage: lease dropped, next try at `runAt`; false when stale. */
  const waitForStorage = (
    claim: Claim,
    spool: { readonly id: string; readonly record: SpoolRecord; readonly runAt: number }
  ) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* storeLater(sql, claim, spool, now)
      return rows.length === 1
    }).pipe(Effect.orDie)

  /**
   * Due `storing` tasks of this spool (and others' whose grace ran out), held for `holdMs` while tried;
   * `heldUntil` is the hold's end, from which `holdStored` renews it.
   */
  const claimStored = (spoolId: string, limit: number, holdMs: number) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const graceMs = limits.storage.outage_grace_s * 1000
      const rows = yield* claimStoring(sql, { spoolId, limit, now, holdMs, graceMs }).pipe(
        Effect.flatMap(decoded(StoringRow))
      )
      return { rows, heldUntil: now + holdMs }
    }).pipe(Effect.orDie)

  /** The hold on claimed `storing` tasks still held at `held`, moved to `until`; how many moved. */
  const holdStored = (ids: ReadonlyArray<string>, held: number, until: number) =>
    ids.length === 0
      ? Effect.succeed(0)
      : holdStoring(sql, ids, held, until).pipe(Effect.map((rows) => rows.length), Effect.orDie)

  /** A `storing` task's next try. */
  const retryStoreAt = (claim: Pick<Claim, "id" | "attempt">, runAt: number) =>
    rescheduleStore(sql, claim, runAt).pipe(Effect.asVoid, Effect.orDie)

  /** A waiting task's result could not be stored: when that first happened (ms); undefined for a stale claim. */
  const storeFailed = (claim: Pick<Claim, "id" | "attempt">) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const [row] = yield* markStoreWait(sql, claim, now)
      return row?.store_since
    }).pipe(Effect.orDie)

  /** The ids of the tasks whose results wait in a spool. */
  const spooled = (spoolId: string) =>
    spooledTasks(sql, spoolId).pipe(Effect.map((rows) => new Set(rows.map((r) => r.id))), Effect.orDie)

  /** Tells the worker running a task in-process that a cancel ended it (a hint: its heartbeat finds out too). */
  const announceCancelled = (id: string) =>
    sql`SELECT pg_notify(${CANCELLED_CHANNEL}, ${id})`.pipe(Effect.asVoid, Effect.ignore)

  /** The ids of tasks a cancel ended while they ran in-process, on any replica: a hint, like `wakeups`. */
  const cancellations = listen(CANCELLED_CHANNEL)

  /** Up to `limit` unfinished tasks past their `Cancel-After` deadline, earliest first. */
  const deadlinesDue = (limit: number) =>
    Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      const rows = yield* dueDeadlines(sql, now, limit)
      return rows.map((r) => r.id)
    }).pipe(Effect.orDie)

  /** A deadline the engine cannot act on is dropped: the task runs on to its end. */
  const forgetDeadline = (id: string) => dropDeadline(sql, id).pipe(Effect.asVoid, Effect.orDie)

  return {
    announceCancelled,
    cancellations,
    deadlinesDue,
    forgetDeadline,
    waitForStorage,
    claimStored,
    holdStored,
    retryStoreAt,
    storeFailed,
    spooled,
    claim,
    heartbeat,
    progress,
    release,
    reapExpired,
    notify,
    wakeups,
    wait,
    claimDue,
    reschedule,
    rescheduleMany,
    hold,
    holdMany,
    waitingOn,
    nudge,
    nudges,
    attempt,
    cost,
    moveTo,
    queued,
    handOn,
    submitInDoubt
  } as const
})

export class TaskQueue extends Context.Tag("TaskQueue")<TaskQueue, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(TaskQueue, make)
}
