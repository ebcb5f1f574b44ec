import type { HttpClientError } from "@effect/platform"
import { certainlyNotSent, GenerationError, retryHintMs } from "../../src/channel/Adapter.ts"

/**
 * What Google's refusals and failures mean for the task (PROTOCOLS.md §2.2).
 * Every failure is the spec's `video_task_failed` with a message of ours:
 * Google's messages name projects, quotas and keys, so they reach the log
 * and `task_attempts` only. `retryable` says whether a fresh task is worth
 * creating.
 */

const FAILED = "video_task_failed"

const failure = (
  message: string,
  retryable: boolean,
  more: { transient?: boolean; retryAfterMs?: number | undefined; notAccepted?: boolean; ambiguous?: boolean } = {}
) => new GenerationError({ code: FAILED, message, retryable, transient: false, ...more })

/** Throttled, overloaded or unreachable before sending: nothing was created, so this or another channel may try. */
export const transient = (retryAfterMs?: number) =>
  failure("The video service is busy. Create a new task to try again.", true, {
    transient: true,
    retryAfterMs,
    notAccepted: true
  })

/**
 * Sent, and no answer we can trust: Google may hold an operation we cannot
 * name (§2.5: no idempotency key, no way to list operations), so the engine
 * fails the task with its refund instead of risking a second charge.
 */
export const ambiguous = () =>
  failure("The video service did not confirm the task. Create a new task to try again.", true, {
    transient: true,
    ambiguous: true
  })

/** This channel's key, project, service account or billing refused: the operator's problem; another channel may take the task. */
export const misconfigured = () =>
  failure("The video service is temporarily unavailable. Create a new task to try again.", true, {
    notAccepted: true
  })

export const unsafe = () => failure("The request or its result was refused by the content safety policy.", false)

const invalid = () => failure("The video service refused the parameters or reference images of this request.", false)

/** A request this adapter does not send at all. */
export const unsupported = (message: string) => failure(message, false)

/** A download that broke off: asked again until the deadline. */
export const fetchBroken = () => failure("The video could not be downloaded.", true, { transient: true })

/** The result is gone upstream (Gemini keeps videos 2 days; an operation expires): the task fails with its refund. */
export const resultExpired = () => failure("The generated video expired before it could be stored.", true)

/** A result in Cloud Storage (`gcsUri`): this channel never asks for one and cannot read one. */
export const unreadableResult = () =>
  failure("The video service returned its result in a form this channel cannot read.", true)

export const fromTransport = (error: HttpClientError.HttpClientError) =>
  certainlyNotSent(error) ? transient() : ambiguous()

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

/** A per-day quota: waiting `retryDelay` will not help (§2.2), so no hint is kept and another channel is tried. */
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
  return invalid()
}

/** A failed poll changes nothing upstream: the engine asks again later, never sooner than the hint. */
export const fromPollStatus = (headers: Readonly<Record<string, string | undefined>>, body: unknown) =>
  failure("Polling the video service failed.", true, { transient: true, retryAfterMs: retryHintMs(headers, body) })

/**
 * An operation that ended with `error` (a google.rpc.Status, numeric
 * codes): 3 INVALID_ARGUMENT and 9 FAILED_PRECONDITION fail again as they
 * are; a safety refusal too; anything else (13 INTERNAL, 14 UNAVAILABLE,
 * 4 DEADLINE_EXCEEDED) is worth a fresh task.
 */
export const fromOperationError = (error: GoogleStatus): GenerationError => {
  if (isSafetyMessage({ error })) return unsafe()
  if (error.code === 3 || error.code === 9 || error.status === "INVALID_ARGUMENT") return invalid()
  return failure("The video could not be generated.", true)
}
