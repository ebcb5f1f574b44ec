import { GenerationError, retryHintMs } from "../../src/channel/contract/Adapter.ts"
import {
  ambiguous,
  invalid,
  misconfigured,
  transient,
  unsafe,
  videoFailure
} from "../../src/channel/contract/VideoFailures.ts"
export {
  ambiguous,
  fetchBroken,
  fromTransport,
  misconfigured,
  resultExpired,
  transient,
  unsafe,
  unsupported
} from "../../src/channel/contract/VideoFailures.ts"

/**
 * What Google's refusals and failures mean for the task (docs/adapters/veo.md,
 * Failures). Every failure is the spec's `video_task_failed` with a message of
 * ours: Google's messages name projects, quotas and keys, so they reach the log
 * and `task_attempts` only. `retryable` says whether a fresh task is worth
 * creating.
 */

/** A result in Cloud Storage (`gcsUri`): this channel never asks for one and cannot read one. */
export const unreadableResult = () =>
  videoFailure("The video service returned its result in a form this channel cannot read.", true)

interface GoogleStatus {
  readonly code?: unknown
  readonly status?: unknown
  readonly message?: unknown
  readonly details?: unknown
}

/** The `error` of a Google Status body (`{"error":{code,status,message,details}}`); HTML pages have none. */
export const statusOf = (body: unknown): GoogleStatus =>
  ((body as { error?: GoogleStatus } | null)?.error ?? {}) as GoogleStatus

const statusWord = (body: unknown) => {
  const s = statusOf(body).status
  return typeof s === "string" ? s : ""
}

/**
 * A per-day quota: waiting `retryDelay` will not help (docs/adapters/veo.md,
 * Failures), so no hint is kept and another channel is tried.
 */
const isDailyQuota = (body: unknown) => {
  const details = statusOf(body).details
  return Array.isArray(details) && details.some((d) =>
    Array.isArray(d?.violations) &&
    d.violations.some((v: { quotaId?: unknown }) => typeof v?.quotaId === "string" && /PerDay/i.test(v.quotaId))
  )
}

const isSafetyMessage = (body: unknown) => {
  const m = statusOf(body).message
  return typeof m === "string" && /safety|responsible ai|sensitive|blocked/i.test(m)
}

/**
 * Google's 404 for the model a create names (docs/adapters/veo.md,
 * Failures): the Gemini API's `models/{m} is not found for API version
 * v1beta, or is not supported for predictLongRunning` (what an unknown or a
 * shut-down model gets), Vertex's `Publisher Model … not found`. A 404 that
 * names no model (a project Vertex does not know) stays the channel's.
 */
export const isModelNotFound = (status: number, body: unknown, model: string) => {
  if (status !== 404) return false
  const message = statusOf(body).message
  if (typeof message !== "string") return false
  return message.includes(`models/${model}`) || /publisher model|not supported for predictLongRunning/i.test(message)
}

/**
 * The route names a model the upstream does not serve (retired or unknown):
 * the route's configuration, not the request's nor a passing state. Not
 * taken, so the engine moves the task to the model's next channel at once;
 * never retried here. Sending it again gives the same answer until the
 * operator changes the route, so a fresh task is no better.
 */
export const modelNotServed = () =>
  videoFailure("This model is not available from the video service at the moment.", false, { notAccepted: true })

/**
 * A non-2xx answer to a create. 429 `RESOURCE_EXHAUSTED` and 500/503 are
 * "not taken" and tried again, `RetryInfo.retryDelay` honoured (a daily
 * quota's hint is dropped). 504 `DEADLINE_EXCEEDED` may have created the
 * operation: ambiguous. 401/403 (bad key, `PERMISSION_DENIED`),
 * `FAILED_PRECONDITION` (billing) and 404 (unknown model or project) are the
 * channel's configuration. 400 `INVALID_ARGUMENT` refuses the request itself;
 * the Gemini API answers a bad key with 400 `INVALID_ARGUMENT` too, told apart
 * by its `API_KEY_INVALID` reason.
 */
export const fromCreateStatus = (
  status: number,
  headers: Readonly<Record<string, string | undefined>>,
  body: unknown
): GenerationError => {
  const word = statusWord(body)
  if (status === 504 || word === "DEADLINE_EXCEEDED") return ambiguous()
  if (status === 429 || status >= 500) return transient(isDailyQuota(body) ? undefined : retryHintMs(headers, body))
  if (JSON.stringify(statusOf(body).details ?? []).includes("API_KEY_INVALID")) return misconfigured()
  if (status === 401 || status === 403 || status === 404 || word === "FAILED_PRECONDITION") return misconfigured()
  if (isSafetyMessage(body)) return unsafe()
  return invalid("reference images")
}

/** A failed poll changes nothing upstream: the engine asks again later, never sooner than the hint. */
export const fromPollStatus = (headers: Readonly<Record<string, string | undefined>>, body: unknown) =>
  videoFailure("Polling the video service failed.", true, { transient: true, retryAfterMs: retryHintMs(headers, body) })

/**
 * An operation that ended with `error` (a google.rpc.Status, numeric
 * codes): 3 INVALID_ARGUMENT and 9 FAILED_PRECONDITION fail again as they
 * are; a safety refusal too; anything else (13 INTERNAL, 14 UNAVAILABLE,
 * 4 DEADLINE_EXCEEDED) is worth a fresh task.
 */
export const fromOperationError = (error: GoogleStatus): GenerationError => {
  if (isSafetyMessage({ error })) return unsafe()
  if (error.code === 3 || error.code === 9 || error.status === "INVALID_ARGUMENT") return invalid("reference images")
  return videoFailure("The video could not be generated.", true)
}
