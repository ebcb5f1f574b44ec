import { Effect, Either } from "effect"
import { Registry } from "../../catalog/Registry.ts"
import { routeRefusal } from "../../catalog/VideoRequest.ts"
import { Channels } from "../../channel/Channels.ts"
import { ChannelStates } from "../../channel/ChannelStates.ts"
import type { GenerationError, UpstreamAnswerDetail } from "../../channel/contract/Generation.ts"
import { decodeStoredRequest } from "../StoredRequest.ts"
import { nothingRan, presumedBilled, type Pricing } from "./AttemptCost.ts"
import { Breakers } from "./Breakers.ts"
import type { Claim } from "./Claim.ts"
import { StaleClaim, TaskOutcomes } from "./TaskOutcomes.ts"
import { TaskQueue } from "./TaskQueue.ts"

/**
 * The first channel after the task's own in its model's order (docs/configuration.md, Routes: Failover)
 * that can take the task's request (a route narrower than the model, or whose upstream cannot make or leave
 * out a soundtrack or take a last frame, is passed over: VideoRequest.ts, `routeRefusal`) and takes new work
 * (an operator may drain or disable one), if any.
 */
const nextChannel = (task: Pick<Claim, "kind" | "model" | "channel" | "request" | "requestVersion">) =>
  Effect.gen(function*() {
    const registry = yield* Registry
    const states = yield* ChannelStates
    const video = task.kind === "video" ? registry.video(task.model) : undefined
    const routes = (task.kind === "video" ? video : registry.image(task.model))?.routes ?? []
    const here = routes.findIndex((r) => r.channel === task.channel)
    if (here < 0) return undefined
    // A request this release cannot read fails wherever it runs (RunTask.ts); it is not for failover to judge.
    const stored = decodeStoredRequest(task.kind, task.requestVersion, task.request)
    const request = Either.isRight(stored) && stored.right.kind === "video" ? stored.right.request : undefined
    for (let i = here + 1; i < routes.length; i++) {
      const channel = routes[i]!.channel
      const refused = video === undefined || request === undefined ? undefined : routeRefusal(video.routes[i]!, request)
      if (refused !== undefined) {
        yield* Effect.logDebug("failover passes over a channel that cannot take the task").pipe(
          Effect.annotateLogs({ channel, why: refused.message })
        )
        continue
      }
      if (yield* states.takesNew(channel)) return channel
    }
    return undefined
  })

/** The cost the task's route through its channel declares, if any. */
const routeCostOf = (task: Pick<Claim, "kind" | "model" | "channel">) =>
  Effect.map(Registry, (registry) => {
    const served = task.kind === "video" ? registry.video(task.model) : registry.image(task.model)
    return served?.routes.find((r) => r.channel === task.channel)?.cost
  })

/**
 * How a run that ended in a failure is settled. A failure the upstream
 * certainly did not take (`notAccepted`: refused before sending, throttled,
 * overloaded, or this channel's credentials refused), with this channel's
 * retries spent, opens the channel's breaker and moves the task to the
 * model's next channel as a new attempt: no refund, no event, nothing
 * charged twice, since nothing ran. Anything else, or a model with no
 * channel left, fails the task with its refund. Channels are only ever
 * tried forward, so a task cannot loop.
 */
export const settleFailure = (claim: Claim, error: GenerationError, pricing: Pricing) =>
  Effect.gen(function*() {
    const failure = { code: error.code, message: error.message, retryable: error.retryable }
    if (error.notAccepted) {
      const channels = yield* Channels
      const cooldownS = channels.get(claim.channel)?.settings.breaker_cooldown_s ?? 60
      yield* Effect.flatMap(Breakers, (b) => b.trip(claim.channel, cooldownS * 1000))
      const moved = yield* moveToNext(claim, { code: error.code, message: error.message }, error.upstream)
      if (moved !== undefined) return moved
    }
    // A submit whose fate stayed unknown may have made a task the provider bills; any other failure of a run
    // ran nothing billed (what was made and billed before it failed is already recorded: RunTask.ts).
    const cost = error.ambiguous && !error.notAccepted ? presumedBilled(pricing) : nothingRan(pricing.cost)
    yield* Effect.flatMap(TaskQueue, (queue) =>
      queue.attempt({
        taskId: claim.id,
        attempt: claim.attempt,
        channel: claim.channel,
        upstreamId: null,
        outcome: error.notAccepted ? "refused" : error.ambiguous ? "ambiguous" : "failed",
        lastAnswer: { code: error.code, message: error.message },
        upstream: error.upstream,
        cost: { ...cost, model: claim.model }
      }))
    return yield* Effect.flatMap(TaskOutcomes, (outcomes) => outcomes.fail(claim, failure))
  })

/**
 * A claim on a channel whose breaker is open goes to the model's next
 * channel before anything is sent; undefined when the channel is closed or
 * is the model's last (then it is tried anyway).
 */
export const skipOpenChannel = (claim: Claim) =>
  Effect.gen(function*() {
    if (!(yield* Effect.flatMap(Breakers, (b) => b.isOpen(claim.channel)))) return undefined
    return yield* moveToNext(claim, { skipped: "breaker open" })
  })

/** The task queued again on the next channel, with the move recorded; undefined when there is none. */
const moveToNext = (claim: Claim, why: Record<string, unknown>, upstream?: UpstreamAnswerDetail) =>
  Effect.gen(function*() {
    const next = yield* nextChannel(claim)
    if (next === undefined) return undefined
    const queue = yield* TaskQueue
    if (!(yield* queue.moveTo(claim, next))) return yield* new StaleClaim({ taskId: claim.id, attempt: claim.attempt })
    yield* queue.attempt({
      taskId: claim.id,
      attempt: claim.attempt,
      channel: claim.channel,
      upstreamId: null,
      outcome: "failover",
      lastAnswer: { ...why, next_channel: next },
      upstream,
      // The channel did not take it: nothing ran there, nothing is billed.
      cost: { ...nothingRan(yield* routeCostOf(claim)), model: claim.model }
    })
    yield* Effect.logWarning("the task moves to the model's next channel").pipe(
      Effect.annotateLogs({ channel: claim.channel, next_channel: next, ...why })
    )
    return { status: "queued" as const }
  })

/**
 * A disabled channel's queued tasks go on to their models' next channels
 * that take new work, as failover (docs/operating.md, Channels); a task
 * whose model has none left waits on this channel, as under draining. How
 * many moved.
 */
export const handOnQueued = (channel: string, limit: number) =>
  Effect.gen(function*() {
    const queue = yield* TaskQueue
    let moved = 0
    for (const task of yield* queue.queued(channel, limit)) {
      const next = yield* nextChannel({
        kind: task.kind,
        model: task.model,
        channel,
        request: task.request,
        requestVersion: task.request_version
      })
      if (next === undefined || !(yield* queue.handOn(task, channel, next))) continue
      moved++
      yield* queue.attempt({
        taskId: task.id,
        attempt: task.attempt + 1,
        channel,
        upstreamId: null,
        outcome: "failover",
        lastAnswer: { skipped: "channel disabled", next_channel: next }
      })
    }
    if (moved > 0) {
      yield* Effect.logInfo("queued tasks of a disabled channel moved on").pipe(
        Effect.annotateLogs({ channel, moved })
      )
    }
    return moved
  })
