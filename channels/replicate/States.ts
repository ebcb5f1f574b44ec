import {
  type Charge,
  type ListedTask,
  type ResultRef,
  UpstreamState,
  usageOf
} from "../../src/channel/contract/Adapter.ts"
import { type Failures, isSafety } from "./Failures.ts"

/**
 * A Replicate prediction as a normalised state (docs/adapters/replicate.md,
 * States). `starting` and `processing` wait; `succeeded` gives its output
 * URLs, which Replicate deletes an hour after the prediction ended (so the
 * engine never waits for one past that); `failed`, `canceled` and `aborted`
 * (a `Cancel-After` deadline passed before it started: the official client
 * waits forever on it) end the task with its refund. Any other word is
 * Unknown: polled again until the deadline.
 */

export interface Prediction {
  readonly id?: unknown
  readonly model?: unknown
  readonly version?: unknown
  readonly status?: unknown
  readonly output?: unknown
  readonly error?: unknown
  readonly created_at?: unknown
  readonly started_at?: unknown
  readonly completed_at?: unknown
  readonly logs?: unknown
  readonly metrics?: Readonly<Record<string, unknown>> | null
}

/**
 * What Replicate charges for a prediction (docs/adapters/replicate.md, Usage
 * and billing). Models priced by the time they run are billed by
 * `metrics.predict_time`, the seconds the prediction ran; official models
 * (which answer `version: "hidden"`) are priced per output, which the engine
 * counts on the files it stores, so their answer reports no usage. Billed: a
 * success, and a prediction that failed or was cancelled after it started
 * (it ran); never an `aborted` one (its deadline passed before it started).
 */
export const chargeOf = (prediction: Prediction): Charge => {
  const metrics = prediction.metrics ?? undefined
  const usage = prediction.version === "hidden" ? undefined : usageOf("second", metrics?.predict_time, metrics)
  const started = str(prediction.started_at) !== undefined
  switch (str(prediction.status)) {
    case "succeeded":
      return { usage, billed: true }
    case "failed":
    case "canceled":
      return { usage, billed: started }
    case "aborted":
      return { usage, billed: false }
    default:
      return started ? { usage } : {}
  }
}

/** Replicate keeps API outputs an hour (data retention). */
const OUTPUT_KEPT_MS = 60 * 60 * 1000

/** A progress bar line of a model's logs (tqdm's `40%|████      | 20/50`), as the official client reads it. */
const PROGRESS_LINE = /^\s*(\d+)%\s*\|.+?\|\s*(\d+)\/(\d+)/

/** The last progress bar's percentage in the logs, below 100 (the task is done only once its result is stored). */
const progressOf = (logs: unknown): number | undefined => {
  if (typeof logs !== "string") return undefined
  for (const line of logs.split("\n").reverse()) {
    const match = PROGRESS_LINE.exec(line)
    if (match) return Math.min(Number(match[1]), 99)
  }
  return undefined
}

const str = (value: unknown) => (typeof value === "string" && value.length > 0 ? value : undefined)

/** The output URLs: a model answers one URL or a list of them. */
const urlsOf = (output: unknown): ReadonlyArray<string> =>
  (Array.isArray(output) ? output : [output]).flatMap((u) => typeof u === "string" && /^https?:\/\//.test(u) ? [u] : [])

export const stateOf = (f: Failures, prediction: Prediction): UpstreamState => {
  const status = str(prediction.status)
  switch (status) {
    case "starting":
      return UpstreamState.Pending({ progress: 0, answer: prediction })
    // Many models print a progress bar while they run; without one, the task's progress stays where it was.
    case "processing":
      return UpstreamState.Pending({ progress: progressOf(prediction.logs), answer: prediction })
    case "succeeded": {
      const completed = Date.parse(str(prediction.completed_at) ?? "")
      const expiresAt = Number.isNaN(completed) ? undefined : completed + OUTPUT_KEPT_MS
      // A success without output is "done but nothing to store": the engine fails it with its refund.
      const results: ReadonlyArray<ResultRef> = urlsOf(prediction.output).map((url) => ({ url, expiresAt }))
      return UpstreamState.Succeeded({ results, answer: prediction, ...chargeOf(prediction) })
    }
    case "failed":
      return UpstreamState.Failed({
        error: isSafety(prediction.error) ? f.unsafe() : f.ended(status),
        answer: prediction,
        ...chargeOf(prediction)
      })
    case "canceled":
    case "aborted":
      return UpstreamState.Failed({ error: f.ended(status), answer: prediction, ...chargeOf(prediction) })
    default:
      return UpstreamState.Unknown({ answer: prediction })
  }
}

/** One prediction of the account's list as the provider's record of it (reconciliation); undefined when unreadable. */
export const listedOf = (prediction: Prediction): ListedTask | undefined => {
  const id = str(prediction.id)
  const created = Date.parse(str(prediction.created_at) ?? "")
  if (id === undefined || Number.isNaN(created)) return undefined
  return {
    upstreamId: id,
    createdAt: created,
    model: str(prediction.model),
    status: str(prediction.status),
    ...chargeOf(prediction)
  }
}
