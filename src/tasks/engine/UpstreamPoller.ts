import { Chunk, Clock, Duration, Effect, Queue as Mailbox, Schedule, Stream } from "effect"
import { TaskKind } from "../../channel/Adapter.ts"
import { Channels } from "../../channel/Channels.ts"
import { GenerationError } from "../../channel/Generation.ts"
import { type AsyncRunner, isAsyncRunner, UpstreamState } from "../../channel/Upstream.ts"
import { AppConfig } from "../../platform/AppConfig.ts"
import { internalFailureOf } from "../Kinds.ts"
import { nextPollDelay, pollTask } from "./PollTask.ts"
import type { WaitingRow } from "./sql/claimWaiting.ts"
import { TaskQueue } from "./TaskQueue.ts"

/** Waiting tasks taken per pass, and ids per poll call (the spec's batch query takes up to 100). */
const PASS_SIZE = 500
const BATCH_SIZE = 100
/** Tasks of one answer handled at once (downloads included). */
const HANDLE_CONCURRENCY = 8

/**
 * One channel's poller (DESIGN.md, Engine states): takes the waiting tasks
 * whose poll is due, asks the upstream about all of them in batches, and
 * hands each answer to pollTask. It holds no task between passes, so a
 * restart simply polls the waiting tasks again; nothing is resubmitted.
 * On a channel that takes upstream callbacks, a callback's NOTIFY wakes it
 * before the interval ends (a hint: the interval still bounds the wait).
 */
export const upstreamPoller = (channelName: string) =>
  Effect.gen(function*() {
    const queue = yield* TaskQueue
    const channels = yield* Channels
    const { limits } = yield* AppConfig
    const settings = channels.get(channelName)!.settings
    const runner = yield* Effect.orDie(channels.runner(channelName))
    const upstreams = new Map<string, AsyncRunner<unknown>>()
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
    const wake = yield* Mailbox.sliding<void>(1)
    if (settings.callbacks) {
      yield* queue.nudges(channelName).pipe(
        Stream.runForEach(() => wake.offer(undefined)),
        Effect.tapErrorCause((cause) => Effect.logWarning("callback listener lost; polling until it is back", cause)),
        Effect.retry(Schedule.spaced("1 second")),
        Effect.forkScoped
      )
    }

    const pollBatch = (upstream: AsyncRunner<unknown>, rows: ReadonlyArray<WaitingRow>) =>
      Effect.gen(function*() {
        const answer = yield* upstream.poll(rows.map((r) => r.upstream_id)).pipe(
          Effect.timeout(Duration.seconds(settings.timeouts.poll_s)),
          Effect.withSpan("upstream.poll", { attributes: { "channel.name": channelName, "poll.ids": rows.length } }),
          Effect.either
        )
        if (answer._tag === "Left") {
          // A failed poll changes nothing upstream: every task is asked again later, as the upstream asked.
          const hint = "retryAfterMs" in answer.left ? answer.left.retryAfterMs : undefined
          yield* Effect.logWarning("polling the upstream failed").pipe(
            Effect.annotateLogs({ reason: answer.left.message })
          )
          const now = yield* Clock.currentTimeMillis
          return yield* Effect.forEach(
            rows,
            (row) => queue.reschedule(row, now + nextPollDelay(intervalMs, row.polls, hint), now + (hint ?? 0))
          )
        }
        yield* Effect.forEach(
          rows,
          (row) => pollTask(row, answer.right.get(row.upstream_id) ?? UpstreamState.Unknown({}), upstream, intervalMs),
          {
            concurrency: HANDLE_CONCURRENCY,
            discard: true
          }
        )
      })

    const pass = Effect.gen(function*() {
      const rows = yield* queue.claimDue(channelName, PASS_SIZE, holdMs)
      // A kind this channel no longer serves asynchronously (its adapter changed): nothing can poll it, so it
      // fails through the refunding path rather than wait forever.
      const orphans = rows.filter((r) => !upstreams.has(r.kind))
      yield* Effect.forEach(orphans, (row) =>
        pollTask(
          row,
          UpstreamState.Failed({ error: new GenerationError({ ...internalFailureOf(row.kind), transient: false }) }),
          upstreams.values().next().value!,
          intervalMs
        ), { discard: true })
      yield* Effect.forEach(upstreams, ([kind, upstream]) => {
        const ofKind = rows.filter((r) => r.kind === kind)
        const batches = Chunk.chunksOf(Chunk.fromIterable(ofKind), BATCH_SIZE)
        return Effect.forEach(batches, (batch) => pollBatch(upstream, Chunk.toReadonlyArray(batch)), {
          concurrency: 4,
          discard: true
        })
      }, { discard: true }).pipe(
        // Stopped mid-pass (a shutdown): the held tasks are due at once, for the next process to poll.
        Effect.onInterrupt(() =>
          Effect.flatMap(
            Clock.currentTimeMillis,
            (now) => Effect.forEach(rows, (row) => queue.reschedule(row, now), { discard: true })
          )
        )
      )
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
