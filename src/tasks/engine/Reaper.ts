import { Effect, Schedule } from "effect"
import { AppConfig } from "../../platform/AppConfig.ts"
import { attemptsSpentFailureOf } from "../Kinds.ts"
import { deadlinesOnce } from "./Deadlines.ts"
import { TaskOutcomes } from "./TaskOutcomes.ts"
import { TaskQueue } from "./TaskQueue.ts"

/**
 * One look for expired leases: tasks with attempts left go back to the queue
 * (idle workers are woken), the others fail with their refund and the
 * failure of their kind. Idempotent, so several reapers at once do no harm.
 */
export const reapOnce = Effect.gen(function*() {
  const queue = yield* TaskQueue
  const outcomes = yield* TaskOutcomes
  const { requeued, exhausted } = yield* queue.reapExpired
  if (requeued.length > 0) {
    yield* Effect.logWarning("expired leases requeued").pipe(
      Effect.annotateLogs({ task_ids: requeued.map((t) => t.id) })
    )
    for (const channel of new Set(requeued.map((t) => t.channel))) yield* queue.notify(channel)
  }
  for (const claim of exhausted) {
    yield* outcomes.fail(claim, attemptsSpentFailureOf(claim.kind)).pipe(
      Effect.catchTag("StaleClaim", () => Effect.void)
    )
  }
})

/**
 * How often the deadline sweep looks, whatever `reaper_interval_s` says: a
 * deadline is a promise to the caller, and one look is one indexed query of
 * the few unfinished tasks past theirs.
 */
const DEADLINE_SWEEP_MS = 1000

/**
 * Takes back the tasks of workers that stopped heartbeating (crashed, frozen,
 * cut off), every `reaper_interval_s`, and ends the tasks past their
 * `Cancel-After` deadline (Deadlines.ts), every second. Every replica runs one.
 */
export const reaper = Effect.gen(function*() {
  const { limits } = yield* AppConfig
  const reap = reapOnce.pipe(Effect.catchAllCause((cause) => Effect.logError("reaper sweep failed", cause)))
  const deadlines = deadlinesOnce.pipe(
    Effect.catchAllCause((cause) => Effect.logError("deadline sweep failed", cause))
  )
  yield* Effect.all([
    Effect.repeat(reap, Schedule.spaced(`${limits.engine.reaper_interval_s} seconds`)),
    Effect.repeat(deadlines, Schedule.spaced(`${DEADLINE_SWEEP_MS} millis`))
  ], { concurrency: 2, discard: true })
})
