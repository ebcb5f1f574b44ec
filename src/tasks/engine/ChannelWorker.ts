import { Duration, Effect, Fiber, Queue, Ref, Schedule, Stream } from "effect"
import { ChannelStates } from "../../channel/ChannelStates.ts"
import type { ChannelSettings } from "../../channel/contract/ChannelSettings.ts"
import { AppConfig } from "../../platform/AppConfig.ts"
import { randomBase62 } from "../../platform/Ids.ts"
import { handOnQueued } from "./Failover.ts"
import { runTask } from "./RunTask.ts"
import { TaskQueue } from "./TaskQueue.ts"

/**
 * The most tasks one claim takes: a claim plans slot by slot over the
 * channel's active accounts (FairShare.ts), so a channel with thousands of
 * free slots fills them in several claims rather than one long one.
 */
const CLAIM_BATCH = 100

/**
 * One channel's worker: keeps up to `concurrency` tasks running, claiming
 * more when a slot frees, when a NOTIFY says work arrived, or when the poll
 * interval passes (NOTIFY is a hint; polling is the guarantee).
 */
export const channelWorker = (channelName: string, channel: ChannelSettings) =>
  Effect.gen(function*() {
    const queue = yield* TaskQueue
    const states = yield* ChannelStates
    const { limits } = yield* AppConfig
    const workerId = `wrk_${randomBase62(8)}`
    const running = yield* Ref.make(0)
    // The fibers of the tasks this worker runs, so a cancel's signal can stop one at once.
    const fibers = new Map<string, Fiber.RuntimeFiber<unknown, unknown>>()
    // Capacity one: many wake-ups before the loop looks again mean one look.
    const wake = yield* Queue.sliding<void>(1)

    yield* queue.wakeups(channelName).pipe(
      Stream.runForEach(() => wake.offer(undefined)),
      Effect.tapErrorCause((cause) => Effect.logWarning("task listener lost; polling until it is back", cause)),
      Effect.retry(Schedule.spaced("1 second")),
      Effect.forkScoped
    )

    // A cancel ended one of our tasks (Cancellation.ts): stop its work now rather than at the next heartbeat.
    yield* queue.cancellations.pipe(
      Stream.runForEach((id) => {
        const fiber = fibers.get(id)
        return fiber === undefined ? Effect.void : Fiber.interruptFork(fiber)
      }),
      Effect.tapErrorCause((cause) => Effect.logWarning("cancel listener lost; heartbeats stop cancelled work", cause)),
      Effect.retry(Schedule.spaced("1 second")),
      Effect.forkScoped
    )

    const claimFree = Effect.gen(function*() {
      // A draining or disabled channel takes no new work; a disabled one hands its queued tasks on.
      const { state } = yield* states.get(channelName)
      if (state === "disabled") yield* handOnQueued(channelName, 100)
      if (state !== "enabled") return false
      const free = Math.min(CLAIM_BATCH, channel.concurrency - (yield* Ref.get(running)))
      if (free <= 0) return false
      const claims = yield* queue.claim(channelName, workerId, free, {
        concurrency: channel.concurrency,
        share: channel.fair_share
      })
      for (const claim of claims) {
        yield* Ref.update(running, (n) => n + 1)
        const fiber = yield* runTask(claim, workerId).pipe(
          Effect.ensuring(
            Effect.sync(() => fibers.delete(claim.id)).pipe(
              Effect.zipRight(Ref.update(running, (n) => n - 1)),
              Effect.zipRight(wake.offer(undefined))
            )
          ),
          Effect.forkScoped
        )
        fibers.set(claim.id, fiber)
        // A run that ended before it was recorded must not stay in the map.
        if (fiber.unsafePoll() !== null) fibers.delete(claim.id)
      }
      // A full batch may mean more are waiting.
      return claims.length === free
    })

    yield* Effect.logInfo("worker started").pipe(
      Effect.annotateLogs({ worker_id: workerId, channel: channelName, concurrency: channel.concurrency })
    )
    const pollInterval = Duration.millis(limits.engine.poll_interval_ms)
    yield* Effect.forever(
      claimFree.pipe(
        Effect.catchAllCause((cause) => Effect.as(Effect.logError("claiming tasks failed", cause), false)),
        Effect.flatMap((more) => more ? Effect.void : Effect.timeout(wake.take, pollInterval).pipe(Effect.ignore))
      )
    )
  }).pipe(Effect.annotateLogs({ channel: channelName }))
