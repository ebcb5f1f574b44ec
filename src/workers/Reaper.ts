import { Effect, Schedule } from "effect"
import { AppConfig } from "../services/AppConfig.ts"
import { Queue } from "../services/Queue.ts"
import { TaskOutcomes } from "../services/TaskOutcomes.ts"

/**
 * Takes back the tasks of workers that stopped heartbeating (crashed, frozen,
 * cut off): back to the queue while attempts remain, otherwise failed with
 * their refund. Every replica runs one; the updates are idempotent, so
 * several reapers at once do no harm.
 */
export const reaper = Effect.gen(function*() {
  const queue = yield* Queue
  const outcomes = yield* TaskOutcomes
  const { limits } = yield* AppConfig

  const sweep = Effect.gen(function*() {
    const { requeued, exhausted } = yield* queue.reapExpired
    if (requeued.length > 0) {
      yield* Effect.logWarning("expired leases requeued").pipe(Effect.annotateLogs({ task_ids: requeued.map((t) => t.id) }))
      for (const channel of new Set(requeued.map((t) => t.channel))) yield* queue.notify(channel)
    }
    for (const claim of exhausted) {
      yield* outcomes.fail(claim, {
        code: "video_task_failed",
        message: "The task could not be completed.",
        retryable: true
      }).pipe(Effect.catchTag("StaleClaim", () => Effect.void))
    }
  }).pipe(Effect.catchAllCause((cause) => Effect.logError("reaper sweep failed", cause)))

  yield* Effect.repeat(sweep, Schedule.spaced(`${limits.engine.reaper_interval_s} seconds`))
})
