import { Cause, Clock, Data, Duration, Effect, Either, Schedule, Stream } from "effect"
import { GenerationError, GenerationEvent } from "../../channel/contract/Generation.ts"
import type { Charge } from "../../channel/contract/Usage.ts"
import { beforeSubmit } from "../../channel/MeteredRunner.ts"
import { AppConfig } from "../../platform/AppConfig.ts"
import type { EngineSettings } from "../../platform/Settings.ts"
import { isPassing } from "../../storage/StorageError.ts"
import { internalFailureOf } from "../Kinds.ts"
import { ReferenceMedia } from "../ReferenceMedia.ts"
import { decodeStoredRequest } from "../StoredRequest.ts"
import { type AttemptWork, costOf, outputsOf } from "./AttemptCost.ts"
import { checkOutputs } from "./CheckOutputs.ts"
import { type Claim, type DecodedClaim, parentSpan } from "./Claim.ts"
import { settleFailure, skipOpenChannel } from "./Failover.ts"
import { type Output, type Plan, planFor, type PlanRun } from "./Plans.ts"
import { ResultSpool } from "./ResultSpool.ts"
import { newAssetIds, storeOutputs } from "./StoreOutputs.ts"
import { nextStoreDelay } from "./StoreRetrier.ts"
import { generationRetries, submitUpstream } from "./SubmitUpstream.ts"
import { StaleClaim, TaskOutcomes } from "./TaskOutcomes.ts"
import { TaskQueue } from "./TaskQueue.ts"

/** The heartbeat found the claim taken back: another attempt owns the task now. */
class LeaseLost extends Data.TaggedError("LeaseLost")<{ readonly taskId: string }> {}

/** Progress is written in steps of this many percent, so a task costs a bounded number of writes. */
const PROGRESS_STEP = 5
/** The share of the bar generation fills; storing the result fills the rest. */
const GENERATION_SHARE = 95

/** A request this release cannot read: the kind's failure, refunded, with nothing internal in the message. */
const unreadableFailure = (kind: Claim["kind"]) => ({
  ...internalFailureOf(kind),
  message:
    "This task was stored by a release of the service that cannot be run by this one. Its charge is refunded; create the task again.",
  retryable: true
})

/**
 * Runs one claimed task to its terminal state: generate (retrying transient
 * failures on the engine's schedule), store the outputs as assets, and write
 * the outcome. A heartbeat extends the lease meanwhile; if the claim is taken
 * back, the work stops and writes nothing. Interrupted (the process stops),
 * the task goes back to the queue for another worker.
 */
export const runTask = (stored: Claim, workerId: string) =>
  Effect.gen(function*() {
    const queue = yield* TaskQueue
    const outcomes = yield* TaskOutcomes
    const config = yield* AppConfig
    const engine: EngineSettings = config.limits.engine

    yield* Effect.gen(function*() {
      const now = yield* Clock.currentTimeMillis
      yield* Effect.annotateCurrentSpan({ "task.queue_wait_ms": now - stored.createdAt * 1000, "worker.id": workerId })
      yield* Effect.logInfo("task claimed").pipe(Effect.annotateLogs({ worker_id: workerId, model: stored.model }))
    }).pipe(Effect.withSpan("task.claim", { attributes: { "task.id": stored.id, "task.attempt": stored.attempt } }))

    const decoded = decodeStoredRequest(stored.kind, stored.requestVersion, stored.request)
    if (Either.isLeft(decoded)) {
      yield* Effect.logError("the stored request cannot be read; the task fails with its refund").pipe(
        Effect.annotateLogs({ reason: decoded.left })
      )
      return yield* outcomes.fail(stored, unreadableFailure(stored.kind))
    }
    const claim: DecodedClaim = { ...stored, ...decoded.right }
    // A channel whose breaker is open is not tried while the model has another.
    const skipped = yield* skipOpenChannel(claim)
    if (skipped !== undefined) return skipped

    const planned = yield* planFor(claim)
    if (!("run" in planned)) return yield* outcomes.fail(claim, planned)
    const plan: Plan = planned

    let written = 0
    const report = (percent: number) => {
      const step = Math.floor(percent / PROGRESS_STEP) * PROGRESS_STEP
      if (step <= written) return Effect.void
      written = step
      return queue.progress(claim, step)
    }
    const attemptOf = { taskId: claim.id, attempt: claim.attempt, channel: claim.channel }
    /** The attempt's cost, once its provider's work is known (the first account stands: recordCost.ts). */
    const costed = (work: AttemptWork) => queue.cost(attemptOf, { ...costOf(plan.pricing, work), model: claim.model })

    const generate = (events: Stream.Stream<GenerationEvent, GenerationError>) =>
      Effect.suspend(() => {
        const outputs: Array<Output> = []
        let charge: Charge | undefined
        return events.pipe(
          Stream.runForEach((event) => {
            if (event._tag === "Progress") return report((event.percent * GENERATION_SHARE) / 100)
            if (event._tag === "Charge") {
              charge = event
              return Effect.void
            }
            outputs.push(event)
            return Effect.void
          }),
          // A synchronous upstream behind the runner said what it charges: its outputs were made, and billed,
          // even should our checks refuse them.
          Effect.zipRight(Effect.suspend(() =>
            charge === undefined
              ? Effect.void
              : costed({
                billed: charge.billed ?? true,
                usage: charge.usage,
                outputs: { count: outputs.length, seconds: undefined }
              })
          )),
          Effect.zipRight(Effect.suspend(() => checkOutputs(claim.kind, outputs, plan.internalFailure))),
          Effect.withSpan("task.generate", { attributes: { "task.id": claim.id, "task.model": claim.model } })
        )
      }).pipe(
        Effect.retry({ schedule: generationRetries(engine), while: (e) => e.transient }),
        Effect.mapError((e) =>
          e.transient
            ? new GenerationError({ ...plan.exhaustedFailure(e), transient: false, notAccepted: e.notAccepted })
            : e
        )
      )

    /**
     * Stores checked outputs and succeeds the task. A store that is away or
     * full does not fail it: the result exists only here, so it waits in the
     * spool and the task becomes `storing` (StoreRetrier.ts stores it later).
     * Where the spool cannot keep it either (full, or on the same full disk),
     * this run keeps it in memory and tries again, its lease kept by the
     * heartbeat; only a crash then loses it, and the task runs again.
     */
    const finish = (outputs: ReadonlyArray<Output>) =>
      Effect.gen(function*() {
        // Made, so paid for, whether or not object storage takes it now (a charge already reported stands).
        yield* costed({ billed: true, outputs: outputsOf(outputs) })
        const spool = yield* ResultSpool
        // An earlier attempt that died while spooling may have left a folder no task records.
        if (claim.attempt > 1) yield* spool.remove(claim.id)
        const assetIds = newAssetIds(outputs.length)
        const succeed = (stored: Effect.Effect.Success<ReturnType<typeof storeOutputs>>) =>
          outcomes.succeed(claim, stored.map((s) => s.asset), { [plan.resultKey]: stored.map((s) => s.item) }).pipe(
            Effect.tap(() =>
              queue.attempt({
                taskId: claim.id,
                attempt: claim.attempt,
                channel: claim.channel,
                upstreamId: null,
                outcome: "succeeded",
                lastAnswer: undefined
              })
            )
          )
        const stored = yield* Effect.either(storeOutputs(claim, plan, outputs, assetIds))
        if (Either.isRight(stored)) return yield* succeed(stored.right)
        const lost = new GenerationError({ ...plan.internalFailure, retryable: true, transient: false })
        yield* Effect.logError("storing a result failed", stored.left)
        const graceMs = config.limits.storage.outage_grace_s * 1000
        if (!isPassing(stored.left) || graceMs === 0) return yield* lost
        const kept = yield* Effect.either(spool.keep(claim.id, outputs, assetIds))
        if (Either.isLeft(kept)) {
          yield* Effect.logWarning("the spool cannot keep the result; this run holds it and tries again").pipe(
            Effect.annotateLogs({ reason: kept.left.message })
          )
          const since = yield* Clock.currentTimeMillis
          const again = yield* storeOutputs(claim, plan, outputs, assetIds).pipe(
            Effect.retry({
              // As a spooled result is tried: from a second, doubling, at most every 30 s, for the grace.
              schedule: Schedule.exponential(Duration.millis(nextStoreDelay(0))).pipe(
                Schedule.union(Schedule.spaced(Duration.millis(nextStoreDelay(Infinity)))),
                Schedule.upTo(Duration.millis(graceMs))
              ),
              while: isPassing
            }),
            Effect.tapError((e) => Effect.logError("storing a held result failed for good", e)),
            Effect.mapError(() => lost)
          )
          yield* Effect.logInfo("a held result is stored").pipe(
            Effect.annotateLogs({ waited_ms: (yield* Clock.currentTimeMillis) - since })
          )
          return yield* succeed(again)
        }
        const record = kept.right
        const now = yield* Clock.currentTimeMillis
        const held = yield* queue.waitForStorage(claim, { id: spool.id, record, runAt: now + nextStoreDelay(0) })
        if (!held) {
          yield* spool.remove(claim.id)
          return yield* new StaleClaim({ taskId: claim.id, attempt: claim.attempt })
        }
        yield* Effect.logWarning("the result waits in the spool for object storage")
        return { status: "in_progress" as const }
      })

    /**
     * An asynchronous upstream: submit, then either finish at once (a
     * synchronous answer) or leave the task waiting with no lease and no
     * fiber; the channel's poller takes it from there (UpstreamPoller.ts).
     */
    const submit = (run: Extract<PlanRun, { _tag: "Upstream" }>) =>
      Effect.gen(function*() {
        const attempt = { taskId: claim.id, attempt: claim.attempt, channel: claim.channel }
        const inDoubt = yield* queue.submitInDoubt(claim)
        // Until its slot in the channel's request budget comes, nothing is sent: an attempt that dies then
        // leaves nothing in doubt.
        yield* queue.attempt({ ...attempt, upstreamId: null, outcome: "pacing", lastAnswer: undefined })
        // A failed submit is recorded where every failure is settled (Failover.ts). Recorded right before sending
        // (the channel's runner runs it after the slot), so an attempt that dies mid-submit leaves a trace the next
        // one reconciles.
        const submitting = queue.attempt({ ...attempt, upstreamId: null, outcome: "submitting", lastAnswer: undefined })
        const outcome = yield* submitUpstream(claim, plan, run, engine, inDoubt).pipe(
          Effect.locally(beforeSubmit, submitting)
        )
        if (outcome._tag === "Finished") {
          // Made and billed, even should our checks refuse the outputs.
          yield* costed({
            billed: true,
            usage: outcome.usage,
            outputs: { count: outcome.outputs.length, seconds: undefined }
          })
          const checked = yield* checkOutputs(
            claim.kind,
            outcome.outputs.map((o) => GenerationEvent.Output(o)),
            plan.internalFailure
          )
          return yield* finish(checked)
        }
        const now = yield* Clock.currentTimeMillis
        yield* queue.attempt({ ...attempt, upstreamId: outcome.upstreamId, outcome: "waiting", lastAnswer: undefined })
        const waiting = yield* queue.wait(claim, {
          id: outcome.upstreamId,
          model: run.upstreamModel,
          runAt: now + engine.poll_interval_ms
        })
        if (!waiting) return yield* new StaleClaim({ taskId: claim.id, attempt: claim.attempt })
        yield* Effect.logInfo("task waits upstream")
        return { status: "in_progress" as const }
      })

    const work = Effect.gen(function*() {
      // External reference URLs are fetched and probed first; a broken rule fails (and refunds) the task.
      if (claim.kind === "video") {
        yield* Effect.flatMap(ReferenceMedia, (r) => r.checkBeforeRun(claim.model, claim.request))
      }
      if (plan.run._tag === "Upstream") return yield* submit(plan.run)
      // A run in this process is an attempt on its channel too, so the operator's view lists it.
      yield* queue.attempt({
        taskId: claim.id,
        attempt: claim.attempt,
        channel: claim.channel,
        upstreamId: null,
        outcome: "running",
        lastAnswer: undefined
      })
      return yield* finish(yield* generate(plan.run.events))
    })

    const heartbeat = queue.heartbeat(claim).pipe(
      // A database blip must not end the work; an expired lease shows on the next beat.
      Effect.catchAllDefect((defect) => Effect.as(Effect.logWarning("heartbeat failed", Cause.die(defect)), true)),
      Effect.filterOrFail((held) => held, () => new LeaseLost({ taskId: claim.id })),
      Effect.repeat(Schedule.spaced(`${engine.heartbeat_s} seconds`)),
      Effect.zipRight(Effect.never)
    )

    return yield* Effect.raceFirst(work, Effect.delay(heartbeat, `${engine.heartbeat_s} seconds`)).pipe(
      Effect.catchTag("GenerationError", (e) => settleFailure(claim, e, plan.pricing)),
      Effect.tap((task) => Effect.logInfo("task finished").pipe(Effect.annotateLogs({ status: task.status }))),
      Effect.catchTags({
        LeaseLost: () => Effect.logWarning("lease lost; another attempt owns the task"),
        StaleClaim: () => Effect.logWarning("stale claim; the outcome of this attempt was refused")
      }),
      Effect.catchAllDefect((defect) =>
        Effect.logError("task run died", Cause.die(defect)).pipe(
          Effect.zipRight(outcomes.fail(claim, internalFailureOf(claim.kind))),
          Effect.catchAllCause(() => Effect.void)
        )
      ),
      Effect.onInterrupt(() => queue.release(claim)),
      Effect.asVoid
    )
  }).pipe(
    Effect.annotateLogs({ task_id: stored.id, attempt: stored.attempt }),
    Effect.withSpan("task.run", {
      parent: parentSpan(stored),
      attributes: {
        "task.id": stored.id,
        "task.model": stored.model,
        "task.kind": stored.kind,
        "task.attempt": stored.attempt,
        "account.id": stored.accountId
      }
    })
  )
