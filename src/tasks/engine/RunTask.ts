import { Cause, Clock, Data, Duration, Effect, Either, Schedule, Stream, Tracer } from "effect"
import { IdPrefix, newId } from "../../platform/Ids.ts"
import type { EngineSettings } from "../../platform/Settings.ts"
import { parseTraceparent } from "../../platform/TraceContext.ts"
import { GenerationError } from "../../channel/Generation.ts"
import { AppConfig } from "../../platform/AppConfig.ts"
import { ObjectStorage } from "../../storage/ObjectStorage.ts"
import type { Claim, DecodedClaim } from "./Claim.ts"
import { decodeStoredRequest } from "../StoredRequest.ts"
import { TaskQueue } from "./TaskQueue.ts"
import { ReferenceMedia } from "../ReferenceMedia.ts"
import { type NewAsset, TaskOutcomes } from "./TaskOutcomes.ts"
import { checkOutputs } from "./CheckOutputs.ts"
import { internalFailureOf } from "../Kinds.ts"
import { type Output, type Plan, planFor } from "./Plans.ts"

/** The heartbeat found the claim taken back: another attempt owns the task now. */
class LeaseLost extends Data.TaggedError("LeaseLost")<{ readonly taskId: string }> {}

/** Progress is written in steps of this many percent, so a task costs a bounded number of writes. */
const PROGRESS_STEP = 5
/** The share of the bar generation fills; storing the result fills the rest. */
const GENERATION_SHARE = 95



/**
 * Retries of a transient generation failure: exponential backoff, but never
 * sooner than the upstream asked (its Retry-After, carried by the error).
 */
const generationRetries = (engine: EngineSettings) =>
  Schedule.identity<GenerationError>().pipe(
    Schedule.intersect(Schedule.exponential(engine.retry_base_ms)),
    Schedule.intersect(Schedule.recurs(engine.generate_retries)),
    Schedule.modifyDelay(([[error]], delay) =>
      error.retryAfterMs === undefined ? delay : Duration.max(delay, Duration.millis(error.retryAfterMs)))
  )

/** A request this release cannot read: the kind's failure, refunded, with nothing internal in the message. */
const unreadableFailure = (kind: Claim["kind"]) => ({
  ...internalFailureOf(kind),
  message: "This task was stored by a release of the service that cannot be run by this one. Its charge is refunded; create the task again.",
  retryable: true
})

const parentSpan = (claim: Claim) => {
  const context = claim.traceContext?.traceparent ? parseTraceparent(claim.traceContext.traceparent) : undefined
  return context === undefined ? undefined : Tracer.externalSpan(context)
}

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
    const storage = yield* ObjectStorage
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

    const planned = yield* planFor(claim)
    if (!("generate" in planned)) return yield* outcomes.fail(claim, planned)
    const plan: Plan = planned

    let written = 0
    const report = (percent: number) => {
      const step = Math.floor(percent / PROGRESS_STEP) * PROGRESS_STEP
      if (step <= written) return Effect.void
      written = step
      return queue.progress(claim, step)
    }
    const retrySchedule = Schedule.exponential(engine.retry_base_ms).pipe(Schedule.intersect(Schedule.recurs(engine.generate_retries)))

    const generate = Effect.suspend(() => {
      const outputs: Array<Output> = []
      return plan.generate.pipe(
        Stream.runForEach((event) => {
          if (event._tag === "Progress") return report((event.percent * GENERATION_SHARE) / 100)
          outputs.push(event)
          return Effect.void
        }),
        Effect.zipRight(Effect.suspend(() => checkOutputs(claim.kind, outputs, plan.internalFailure))),
        Effect.withSpan("task.generate", { attributes: { "task.id": claim.id, "task.model": claim.model } })
      )
    }).pipe(
      Effect.retry({ schedule: generationRetries(engine), while: (e) => e.transient }),
      Effect.mapError((e) => (e.transient ? new GenerationError({ ...plan.exhaustedFailure(e), transient: false }) : e))
    )

    const store = (outputs: ReadonlyArray<Output>) =>
      Effect.forEach(outputs, (output, index) =>
        Effect.gen(function*() {
          const id = newId(IdPrefix.asset)
          const filename = `${id}.${output.extension}`
          const storageKey = `results/${claim.id}/${filename}`
          yield* storage.put(storageKey, output.bytes, output.mimeType)
          const signed = plan.channel.url_auth === "none"
            ? yield* storage.presignGet(storageKey, { expiresInS: plan.channel.result_url_ttl_s })
            : undefined
          const link = signed !== undefined
            ? { url: signed.url, temporary: true }
            : { url: `${config.publicBaseUrl}/v1/assets/${id}/content`, temporary: false }
          const asset: NewAsset = {
            id,
            storageKey,
            mimeType: output.mimeType,
            filename,
            sizeBytes: output.bytes.byteLength,
            width: output.width ?? null,
            height: output.height ?? null,
            durationMs: output.durationMs ?? null,
            url: link.url,
            urlAuth: plan.channel.url_auth,
            expiresAt: signed?.expiresAt ?? null
          }
          return { asset, item: plan.item(output, { id, filename, ...link }, index) }
        })).pipe(
        Effect.retry(retrySchedule),
        Effect.withSpan("task.store", { attributes: { "task.id": claim.id, "task.outputs": outputs.length } })
      )

    const work = Effect.gen(function*() {
      // External reference URLs are fetched and probed first; a broken rule fails (and refunds) the task.
      if (claim.kind === "video") yield* Effect.flatMap(ReferenceMedia, (r) => r.checkBeforeRun(claim.model, claim.request))
      const outputs = yield* generate
      const stored = yield* store(outputs).pipe(
        Effect.tapError((e) => Effect.logError("storing a result failed", e)),
        Effect.mapError(() => new GenerationError({ ...plan.internalFailure, transient: false }))
      )
      return yield* outcomes.succeed(claim, stored.map((s) => s.asset), { [plan.resultKey]: stored.map((s) => s.item) })
    })

    const heartbeat = queue.heartbeat(claim).pipe(
      // A database blip must not end the work; an expired lease shows on the next beat.
      Effect.catchAllDefect((defect) => Effect.as(Effect.logWarning("heartbeat failed", Cause.die(defect)), true)),
      Effect.filterOrFail((held) => held, () => new LeaseLost({ taskId: claim.id })),
      Effect.repeat(Schedule.spaced(`${engine.heartbeat_s} seconds`)),
      Effect.zipRight(Effect.never)
    )

    return yield* Effect.raceFirst(work, Effect.delay(heartbeat, `${engine.heartbeat_s} seconds`)).pipe(
      Effect.catchTag("GenerationError", (e) =>
        outcomes.fail(claim, { code: e.code, message: e.message, retryable: e.retryable })),
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
