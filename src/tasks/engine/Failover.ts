import { Effect } from "effect"
import { Registry } from "../../catalog/Registry.ts"
import type { GenerationError } from "../../channel/Generation.ts"
import type { Claim } from "./Claim.ts"
import { StaleClaim, TaskOutcomes } from "./TaskOutcomes.ts"
import { TaskQueue } from "./TaskQueue.ts"

/** The channel after the task's own in its model's order (DESIGN.md, Channels: Failover), if any. */
const nextChannel = (claim: Claim) =>
  Effect.map(Registry, (registry) => {
    const served = claim.kind === "video" ? registry.video(claim.model) : registry.image(claim.model)
    const routes = served?.routes ?? []
    const here = routes.findIndex((r) => r.channel === claim.channel)
    return here < 0 ? undefined : routes[here + 1]?.channel
  })

/**
 * How a run that ended in a failure is settled. A failure the upstream
 * certainly did not take (`notAccepted`: refused before sending, throttled,
 * overloaded, or this channel's credentials refused), with this channel's
 * retries spent, moves the task to the model's next channel as a new
 * attempt: no refund, no event, nothing charged twice, since nothing ran.
 * Anything else, or a model with no channel left, fails the task with its
 * refund. Channels are only ever tried forward, so a task cannot loop.
 */
export const settleFailure = (claim: Claim, error: GenerationError) =>
  Effect.gen(function*() {
    const outcomes = yield* TaskOutcomes
    const failure = { code: error.code, message: error.message, retryable: error.retryable }
    const next = error.notAccepted ? yield* nextChannel(claim) : undefined
    if (next === undefined) return yield* outcomes.fail(claim, failure)
    const queue = yield* TaskQueue
    if (!(yield* queue.moveTo(claim, next))) return yield* new StaleClaim({ taskId: claim.id, attempt: claim.attempt })
    yield* queue.attempt({
      taskId: claim.id,
      attempt: claim.attempt,
      channel: claim.channel,
      upstreamId: null,
      outcome: "failover",
      lastAnswer: { code: error.code, message: error.message, next_channel: next }
    })
    yield* Effect.logWarning("the channel did not take the task; it moves to the model's next channel").pipe(
      Effect.annotateLogs({ channel: claim.channel, next_channel: next, code: error.code })
    )
    return { status: "queued" as const }
  })
