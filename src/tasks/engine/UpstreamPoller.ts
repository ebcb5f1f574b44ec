import { Array, Chunk, Clock, Duration, Effect, Fiber, Queue, Schedule, Stream } from "effect"
import { Channels } from "../../channel/Channels.ts"
import { TaskKind } from "../../channel/contract/Adapter.ts"
import { GenerationError } from "../../channel/contract/Generation.ts"
import { type AsyncRunner, isAsyncRunner, UpstreamState } from "../../channel/contract/Upstream.ts"
import { budgetPollGapMs, HEADROOM, operationRate, pollClaimLimit } from "../../channel/Pacing.ts"
import { AppConfig } from "../../platform/AppConfig.ts"
import { Metrics } from "../../platform/metrics/Metrics.ts"
import { internalFailureOf } from "../Kinds.ts"
import type { WaitingRow } from "./Claim.ts"
import { deadlineOf, MAX_POLL_GAP_MS, nextPollDelay, pollTask } from "./PollTask.ts"
import { TaskQueue } from "./TaskQueue.ts"

/** Waiting tasks taken per pass, and ids per poll call (the spec's batch query takes up to 100). */
const PASS_SIZE = 500
const BATCH_SIZE = 100
/** Tasks of one answer handled at once. */
const HANDLE_CONCURRENCY = 8
/** Finished tasks whose results are downloaded at once, apart from the passes. */
const FETCH_CONCURRENCY = 16
/**
 * The longest gap between two polls of a task on a channel that polls in
 * batches (`pollBatch` > 1): a hundred tasks cost one request there, so
 * they are asked often enough that a finished task is seen within seconds.
 */
export const BATCHED_POLL_GAP_MS = 3_000
/** Passes whose durations make the slack (the longest of them counts). */
const PASS_HISTORY = 5
/** Poll calls of one pass at once on a channel without a request budget (each up to BATCH_SIZE ids). */
const PASS_CONCURRENCY = 4
/** At most this many poll requests of one pass wait for their slots or run at once on a paced channel. */
const PACED_CONCURRENCY = 64

/**
 * How a pass is paced on a channel with a request budget (docs/engine.md,
 * The upstream request budget): the requests a second it may poll at now
 * (its share of the budget at the channel's current rate), and the ids
 * one request asks about.
 */
interface Pace {
  readonly perSecond: number
  readonly batch: number
}

/**
 * One channel's poller (docs/engine.md, Waiting upstream and polling): takes
 * the waiting tasks whose poll is due, asks the upstream about all of them in
 * batches, and hands each answer to pollTask; finished tasks' downloads run
 * apart, so a pass is never held by them. It holds no task between passes, so a
 * restart simply polls the waiting tasks again; nothing is resubmitted. On a
 * channel that takes upstream callbacks, a callback's NOTIFY wakes it before
 * the interval ends (a hint: the interval still bounds the wait).
 *
 * On a channel with a request budget, every poll call is one request (its
 * slot taken by the channel's runner, MeteredRunner.ts); a pass takes no more
 * due tasks than the budget lets it poll within their hold, and the next poll
 * of each task waits at least as long as polling every waiting task once
 * takes at that rate, so the gap stretches with the number waiting rather
 * than the requests piling up.
 */
export const upstreamPoller = (channelName: string) =>
  Effect.gen(function*() {
    const queue = yield* TaskQueue
    const channels = yield* Channels
    const metrics = yield* Metrics
    const { limits } = yield* AppConfig
    const settings = channels.get(channelName)!.settings
    const budget = channels.budget(channelName)
    const runner = yield* Effect.orDie(channels.runner(channelName))
    const upstreams = new Map<string, AsyncRunner<unknown>>()
    const scope = yield* Effect.scope
    for (const kind of TaskKind.literals) {
      const r = (runner as Partial<Record<TaskKind, unknown>>)[kind]
      if (isAsyncRunner(r)) upstreams.set(kind, r)
    }
    // An in-process channel has nothing waiting upstream.
    if (upstreams.size === 0) return
    const intervalMs = limits.engine.poll_interval_ms
    // Held longer than one poll call can last, so a slow pass is not polled twice at once, and short
    // enough that tasks of a poller that died are polled again soon (downloads extend their own hold).
    const holdMs = settings.timeouts.poll_s * 2 * 1000
    // Capacity one: many callbacks before the loop looks again mean one pass.
    const wake = yield* Queue.sliding<void>(1)
    if (settings.callbacks) {
      yield* queue.nudges(channelName).pipe(
        Stream.runForEach(() => wake.offer(undefined)),
        Effect.tapErrorCause((cause) => Effect.logWarning("callback listener lost; polling until it is back", cause)),
        Effect.retry(Schedule.spaced("1 second")),
        Effect.forkScoped
      )
    }

    // A task due just after a pass took its tasks waits for that pass, the pause and its place in the next pass:
    // the backoff's cap leaves that slack, so the promised gap holds between two polls as the upstream sees them.
    const passes: Array<number> = []
    const capFor = (upstream: AsyncRunner<unknown>) => {
      const promised = (upstream.pollBatch ?? 1) > 1 ? BATCHED_POLL_GAP_MS : MAX_POLL_GAP_MS
      return Math.max(intervalMs, promised - intervalMs - 2 * Math.max(0, ...passes))
    }
    // What each task's last answer said (its state and progress), so an unchanged answer is not written again:
    // its task is rescheduled with the others of its batch in one statement, where a changed one costs its own
    // writes (the attempt's answer, the reschedule).
    const lastSaid = new Map<string, string>()
    // The tasks waiting on the channel when last counted, which bounds `lastSaid`.
    let knownWaiting = 0
    const saidOf = (state: UpstreamState) => `${state._tag}:${state._tag === "Pending" ? state.progress : ""}`

    // Downloads run apart from the passes, a few at once; a task already being fetched is not fetched twice.
    const permits = yield* Effect.makeSemaphore(FETCH_CONCURRENCY)
    const fetching = new Set<string>()
    const fetchApart = <R>(
      task: { readonly id: string; readonly attempt: number },
      fetch: Effect.Effect<void, never, R>
    ) =>
      fetching.has(task.id) ? Effect.void : Effect.suspend(() => {
        fetching.add(task.id)
        return fetch.pipe(
          permits.withPermits(1),
          // Stopped before it ended (a shutdown): the held task is due at once, for the next process to fetch.
          Effect.onInterrupt(() =>
            Effect.flatMap(Clock.currentTimeMillis, (now) => queue.reschedule(task, now)).pipe(Effect.ignore)
          ),
          Effect.ensuring(Effect.sync(() => fetching.delete(task.id))),
          Effect.forkIn(scope),
          Effect.asVoid
        )
      })

    const pollBatch = (upstream: AsyncRunner<unknown>, rows: ReadonlyArray<WaitingRow>, floorMs: number) =>
      Effect.gen(function*() {
        const asked = yield* Clock.currentTimeMillis
        // The runner bounds each request by `poll_s` from its slot (MeteredRunner.ts).
        const answer = yield* upstream.poll(rows.map((r) => r.upstream_id)).pipe(
          Effect.withSpan("upstream.poll", { attributes: { "channel.name": channelName, "poll.ids": rows.length } }),
          Effect.either
        )
        // When the poll was sent: on a paced channel the call waited for its slot first, so its answer's arrival is
        // the nearer mark (a request's latency late, which only lengthens the gap the budget asks for).
        const polledAt = budget === undefined ? asked : yield* Clock.currentTimeMillis
        for (const row of rows) {
          if (row.polled_at !== null) metrics.pollGap(channelName, Math.max(0, polledAt - row.polled_at) / 1000)
        }
        if (answer._tag === "Left") {
          // A failed poll changes nothing upstream: every task is asked again later, as the upstream asked,
          // until its deadline: an upstream that stays away, or answers garbage, does not hold tasks forever.
          const hint = "retryAfterMs" in answer.left ? answer.left.retryAfterMs : undefined
          yield* Effect.logWarning("polling the upstream failed").pipe(
            Effect.annotateLogs({ reason: answer.left.message })
          )
          const capMs = capFor(upstream)
          const now = yield* Clock.currentTimeMillis
          const graceMs = limits.storage.outage_grace_s * 1000
          const [waiting, overdue] = Array.partition(
            rows,
            (row) => now >= deadlineOf(row, settings.timeouts.deadline_s, graceMs)
          )
          // Ended through pollTask, which finds them past their deadline: failed with the refund, the attempt noted.
          const unanswered = UpstreamState.Unknown({ answer: { poll_failed: answer.left.message } })
          yield* Effect.forEach(
            overdue,
            (row) =>
              pollTask(row, unanswered, {
                runner: upstream,
                intervalMs,
                polledAt,
                capMs,
                floorMs,
                changed: true,
                fetchApart
              }),
            { discard: true }
          )
          return yield* Effect.forEach(
            waiting,
            (row) =>
              queue.reschedule(
                row,
                polledAt + nextPollDelay(intervalMs, row.polls, hint, capMs, floorMs),
                now + (hint ?? 0),
                polledAt
              )
          )
        }
        const capMs = capFor(upstream)
        // A task whose answer has not changed and whose deadline is not near only needs its next poll: those
        // are rescheduled together, so a batch of tasks still running costs one statement, not one each.
        const deadlineMs = settings.timeouts.deadline_s * 1000
        const quiet: Array<{ readonly claim: WaitingRow; readonly runAt: number }> = []
        const handled: Array<{ readonly row: WaitingRow; readonly state: UpstreamState; readonly changed: boolean }> =
          []
        for (const row of rows) {
          const state = answer.right.get(row.upstream_id) ?? UpstreamState.Unknown({})
          const said = saidOf(state)
          const changed = lastSaid.get(row.id) !== said
          const waits = state._tag === "Pending" || state._tag === "Unknown"
          if (waits) lastSaid.set(row.id, said)
          else lastSaid.delete(row.id)
          const runAt = polledAt + nextPollDelay(intervalMs, row.polls, undefined, capMs, floorMs)
          if (waits && !changed && runAt - row.submitted_at < deadlineMs) quiet.push({ claim: row, runAt })
          else handled.push({ row, state, changed })
        }
        // A callback that named one of them while it was polled brings its next poll to now.
        yield* queue.rescheduleMany(quiet, yield* Clock.currentTimeMillis, polledAt)
        yield* Effect.forEach(
          handled,
          ({ changed, row, state }) =>
            pollTask(row, state, { runner: upstream, intervalMs, polledAt, capMs, floorMs, changed, fetchApart }),
          { concurrency: HANDLE_CONCURRENCY, discard: true }
        )
      })

    // A paced channel's share for polls now: the budget's poll rate at the channel's current (shared) rate factor,
    // as its slots are spaced (with the headroom).
    const paceNow = Effect.gen(function*() {
      if (budget === undefined) return undefined
      const factor = yield* budget.factor
      const batch = Math.min(...[...upstreams.values()].map((u) => u.pollBatch ?? 1))
      return { perSecond: operationRate(budget.budget, "poll") * HEADROOM * factor, batch } satisfies Pace
    })

    const pass = Effect.gen(function*() {
      const started = yield* Clock.currentTimeMillis
      const pace = yield* paceNow
      // Paced: only what its budget lets it poll before their hold runs out (the last request needs `poll_s` to
      // answer), so another replica does not take them again meanwhile; the hold is renewed below all the same,
      // for when the channel's rate falls or other replicas share it.
      const limit = pace === undefined
        ? PASS_SIZE
        : pollClaimLimit(pace.perSecond, pace.batch, holdMs - settings.timeouts.poll_s * 1000, PASS_SIZE)
      const rows = yield* queue.claimDue(channelName, limit, holdMs)
      // Polling every waiting task once takes this long at the budget: no task is asked again sooner.
      if (pace !== undefined && rows.length > 0) knownWaiting = yield* queue.waitingOn(channelName)
      const floorMs = pace === undefined || rows.length === 0
        ? 0
        : budgetPollGapMs(knownWaiting, pace.perSecond, pace.batch)
      const unasked = new Set(rows.map((r) => r.id))
      const renewing = yield* Clock.currentTimeMillis.pipe(
        Effect.flatMap((now) => queue.holdMany([...unasked], now + holdMs)),
        Effect.catchAllDefect((defect) => Effect.logWarning("renewing the poller's hold failed", defect)),
        Effect.delay(Duration.millis(holdMs / 3)),
        Effect.forever,
        Effect.fork
      )
      // A kind this channel no longer serves asynchronously (its adapter changed): nothing can poll it, so it
      // fails through the refunding path rather than wait forever.
      const orphans = rows.filter((r) => !upstreams.has(r.kind))
      yield* Effect.forEach(orphans, (row) =>
        pollTask(
          row,
          UpstreamState.Failed({ error: new GenerationError({ ...internalFailureOf(row.kind), transient: false }) }),
          {
            runner: upstreams.values().next().value!,
            intervalMs,
            polledAt: started,
            capMs: MAX_POLL_GAP_MS,
            floorMs: 0,
            changed: true,
            fetchApart
          }
        ), { discard: true })
      yield* Effect.forEach(upstreams, ([kind, upstream]) => {
        const ofKind = rows.filter((r) => r.kind === kind)
        // Paced, each call is one request: a batch query's ids, or one id where each is a request of its own.
        const size = pace === undefined ? BATCH_SIZE : (upstream.pollBatch ?? 1)
        const batches = Chunk.chunksOf(Chunk.fromIterable(ofKind), size)
        const concurrency = pace === undefined
          ? PASS_CONCURRENCY
          : Math.min(PACED_CONCURRENCY, Math.max(PASS_CONCURRENCY, Math.ceil(pace.perSecond)))
        return Effect.forEach(
          batches,
          (batch) => {
            const some = Chunk.toReadonlyArray(batch)
            return pollBatch(upstream, some, floorMs).pipe(
              Effect.ensuring(Effect.sync(() => some.forEach((row) => unasked.delete(row.id))))
            )
          },
          { concurrency, discard: true }
        )
      }, { discard: true }).pipe(
        Effect.ensuring(Fiber.interrupt(renewing)),
        // Stopped mid-pass (a shutdown): the held tasks are due at once, for the next process to poll.
        Effect.onInterrupt(() =>
          Effect.flatMap(
            Clock.currentTimeMillis,
            (now) => Effect.forEach(rows, (row) => queue.reschedule(row, now), { discard: true })
          )
        )
      )
      if (rows.length > 0) {
        passes.push((yield* Clock.currentTimeMillis) - started)
        if (passes.length > PASS_HISTORY) passes.shift()
      }
      // A task forgotten here (it ended elsewhere, or another replica polls it) is forgotten after a while: the
      // answers start over once they outnumber twice the tasks waiting on the channel. A bound of its own, below
      // the tasks waiting, would start them over every cycle, and every answer would be written again as new
      // (at 100,000 waiting, that was most of a worker's CPU).
      if (lastSaid.size > PASS_SIZE * 20 && lastSaid.size > 2 * knownWaiting) {
        if (pace === undefined) knownWaiting = yield* queue.waitingOn(channelName)
        if (lastSaid.size > 2 * knownWaiting) lastSaid.clear()
      }
      return rows.length === PASS_SIZE
    })

    yield* Effect.logInfo("upstream poller started")
    yield* Effect.forever(
      pass.pipe(
        Effect.catchAllCause((cause) => Effect.as(Effect.logError("polling waiting tasks failed", cause), false)),
        Effect.flatMap((more) =>
          more ? Effect.void : Effect.timeout(wake.take, Duration.millis(intervalMs)).pipe(Effect.ignore)
        )
      )
    )
  }).pipe(Effect.annotateLogs({ channel: channelName }))
