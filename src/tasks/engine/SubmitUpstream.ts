import { Duration, Effect, Schedule } from "effect"
import { GenerationError } from "../../channel/contract/Generation.ts"
import { SubmitOutcome } from "../../channel/contract/Upstream.ts"
import type { EngineSettings } from "../../platform/Settings.ts"
import type { Claim } from "./Claim.ts"
import type { Plan, PlanRun } from "./Plans.ts"

type UpstreamRun = Extract<PlanRun, { _tag: "Upstream" }>

/**
 * Retries of a transient failure: exponential backoff, but never sooner than
 * the upstream asked (its Retry-After, carried by the error).
 */
export const generationRetries = (engine: EngineSettings) =>
  Schedule.identity<GenerationError>().pipe(
    Schedule.intersect(Schedule.exponential(engine.retry_base_ms)),
    Schedule.intersect(Schedule.recurs(engine.generate_retries)),
    Schedule.modifyDelay(([[error]], delay) =>
      error.retryAfterMs === undefined ? delay : Duration.max(delay, Duration.millis(error.retryAfterMs))
    )
  )

/**
 * A submit whose fate stayed unknown: the task fails with its refund (retryable), and the attempt is recorded
 * as ambiguous, counted as billed until the provider's record says otherwise (AttemptCost.ts).
 */
const UNRESOLVED = { retryable: true, transient: false, ambiguous: true } as const

/**
 * Submits a task to its asynchronous upstream. A submit that certainly was
 * not accepted (transient, not ambiguous) is tried again on the engine's
 * schedule. An ambiguous one is reconciled through the adapter's `find`
 * before anything else: a found task is adopted; "certainly none" allows a
 * new submit; without `find`, or when `find` cannot tell, the task fails
 * with its refund (retryable) rather than risk a second upstream charge.
 * `inDoubt`: an earlier attempt stopped mid-submit (a crash, a shutdown), so
 * the first step is that same reconciliation, not a submit.
 */
export const submitUpstream = (
  claim: Claim,
  plan: Plan,
  run: UpstreamRun,
  engine: EngineSettings,
  inDoubt: boolean
) => {
  const unresolved = new GenerationError({ ...plan.internalFailure, ...UNRESOLVED })

  const reconcile = (error: GenerationError): Effect.Effect<SubmitOutcome, GenerationError> => {
    if (!error.ambiguous) return Effect.fail(error)
    if (run.find === undefined) {
      return Effect.logWarning("ambiguous submit and the adapter cannot look for the task; failing with refund").pipe(
        Effect.zipRight(Effect.fail(unresolved))
      )
    }
    return run.find.pipe(
      Effect.retry({ schedule: generationRetries(engine), while: (e) => e.transient && !e.ambiguous }),
      Effect.withSpan("upstream.find", { attributes: { "task.id": claim.id } }),
      Effect.mapError(() => unresolved),
      Effect.flatMap((upstreamId) =>
        upstreamId === undefined
          // The upstream certainly holds no task of ours: submitting again is safe.
          ? Effect.fail(new GenerationError({ ...plan.internalFailure, transient: true }))
          : Effect.succeed(SubmitOutcome.Accepted({ upstreamId }))
      )
    )
  }

  const lost = new GenerationError({ ...plan.internalFailure, transient: true, ambiguous: true })
  // The adapter applies `submit_s`; the channel's runner (channel/MeteredRunner.ts) guards against one that does
  // not, counting from the request's slot in the channel's budget, so waiting for the budget is never a time-out.
  const submitOnce = run.submit.pipe(
    Effect.withSpan("upstream.submit", { attributes: { "task.id": claim.id, "task.channel": claim.channel } }),
    Effect.catchAll(reconcile)
  )
  // Reconcile first when in doubt; once told "none", later tries submit.
  let findFirst = inDoubt
  return Effect.suspend(() => {
    if (!findFirst) return submitOnce
    findFirst = false
    return reconcile(lost)
  }).pipe(
    Effect.retry({ schedule: generationRetries(engine), while: (e) => e.transient && !e.ambiguous }),
    Effect.mapError((e) =>
      e.transient
        ? new GenerationError({ ...plan.exhaustedFailure(e), transient: false, notAccepted: e.notAccepted })
        : e
    )
  )
}
