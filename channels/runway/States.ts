import { type Charge, UpstreamState, withUpstream } from "../../src/channel/contract/Adapter.ts"
import { cancelledUpstream, fromFailureCode } from "./Failures.ts"

/**
 * Runway's task object (`GET /v1/tasks/{id}`, docs/adapters/runway.md, States
 * and polling) as a normalised state: PENDING, THROTTLED (queued behind the
 * account's concurrency) and RUNNING wait; SUCCEEDED gives the `output` URLs;
 * FAILED ends the task with its refund, by `failureCode` (Failures.ts);
 * CANCELLED (cancelled or deleted by someone else) too. Any other word, or
 * none, is Unknown: polled again until the deadline, never failed on sight.
 */

export interface RunwayTask {
  readonly id?: unknown
  readonly status?: unknown
  readonly progress?: unknown
  readonly output?: unknown
  readonly failure?: unknown
  readonly failureCode?: unknown
  readonly cost?: unknown
}

const str = (value: unknown) => (typeof value === "string" && value.length > 0 ? value : undefined)

/** Runway's `progress` of a running task is a fraction (0 to 1); a percentage is read as one too. */
const percentOf = (value: unknown) => {
  if (typeof value !== "number" || !Number.isFinite(value) || value < 0) return undefined
  return Math.min(100, value <= 1 ? value * 100 : value)
}

/**
 * What Runway charges for a finished task (docs/adapters/runway.md, Usage
 * and billing): its `cost.credits`, the final credits of a terminal task
 * (0 once fully refunded). Credits are no unit of ours: the engine counts the
 * seconds of the video it stored, and the credits are kept beside for
 * operators. Billed when it charged any; without `cost`, a success counts as
 * billed and a failure as not.
 */
const chargeOf = (task: RunwayTask, succeeded: boolean): Charge => {
  const credits = (task.cost as { credits?: unknown } | null | undefined)?.credits
  return typeof credits === "number" && Number.isFinite(credits) ? { billed: credits > 0 } : { billed: succeeded }
}

export const stateOf = (task: RunwayTask): UpstreamState => {
  switch (task.status) {
    case "PENDING":
    case "THROTTLED":
      return UpstreamState.Pending({ progress: 0, answer: task })
    case "RUNNING":
      return UpstreamState.Pending({ progress: percentOf(task.progress), answer: task })
    case "SUCCEEDED": {
      const urls = (Array.isArray(task.output) ? task.output : []).map(str).filter((u): u is string => !!u)
      // The URLs expire within 24 to 48 hours; a fresh read of the task gives fresh ones.
      return UpstreamState.Succeeded({
        results: urls.map((url) => ({ url, mimeType: "video/mp4" })),
        answer: task,
        ...chargeOf(task, true)
      })
    }
    case "FAILED":
      return UpstreamState.Failed({
        error: withUpstream(fromFailureCode(str(task.failureCode)), {
          code: str(task.failureCode) ?? "FAILED",
          message: str(task.failure)
        }),
        answer: task,
        ...chargeOf(task, false)
      })
    case "CANCELLED":
      return UpstreamState.Failed({
        error: withUpstream(cancelledUpstream(), { code: "CANCELLED" }),
        answer: task,
        ...chargeOf(task, false)
      })
    default:
      return UpstreamState.Unknown({ answer: task })
  }
}
