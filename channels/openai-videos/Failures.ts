import type { HttpClientError } from "@effect/platform"
import { certainlyNotSent, FailureCodes, GenerationError, retryHintMs } from "../../src/channel/contract/Adapter.ts"

/**
 * What a failed exchange with an OpenAI Videos upstream means for the task
 * (docs/adapters/openai-videos.md, Failures). Every message here is the
 * gateway's own: the upstream's words may name its model, the operator's
 * organisation, the relay behind it or request ids, so they reach the
 * operator's log and task_attempts only. The code is the spec's
 * `video_task_failed`, the only terminal code for an upstream failure.
 */

const FAILED = FailureCodes.videoFailed
const GENERIC = "The video could not be generated."

type Headers = Readonly<Record<string, string | undefined>>

/** Throttled, overloaded or unreachable: nothing was made, so this or another channel may take the task later. */
export const transient = (retryAfterMs?: number) =>
  new GenerationError({
    code: FAILED,
    message: GENERIC,
    retryable: true,
    transient: true,
    retryAfterMs,
    notAccepted: true
  })

/**
 * A poll or a download that did not work this time: asked again later (the task was taken, so no failover).
 * `throttled`: the answer was a 429 (Generation.ts).
 */
export const busy = (retryAfterMs?: number, throttled?: boolean) =>
  new GenerationError({ code: FAILED, message: GENERIC, retryable: true, transient: true, retryAfterMs, throttled })

/**
 * The create may have reached the upstream and been run (a time-out or a
 * connection dropped after sending, or an answer without an id). The
 * protocol cannot find a task by our id, so the engine fails the task with
 * its refund rather than risk a second upstream charge.
 */
export const ambiguous = () =>
  new GenerationError({ code: FAILED, message: GENERIC, retryable: true, transient: true, ambiguous: true })

/** This channel's key, balance, model or address refused: not the caller's fault, and not fixed by retrying here. */
const misconfigured = () =>
  new GenerationError({ code: FAILED, message: GENERIC, retryable: true, transient: false, notAccepted: true })

const refused = () =>
  new GenerationError({
    code: FAILED,
    message: "The video service refused this request's parameters.",
    retryable: false,
    transient: false
  })

const contentPolicy = () =>
  new GenerationError({
    code: FAILED,
    message: "The video service's content policy refused this prompt or its result.",
    retryable: false,
    transient: false
  })

/** The upstream ran the task and it failed for its own reasons: a new task may well succeed. */
const failedUpstream = () => new GenerationError({ code: FAILED, message: GENERIC, retryable: true, transient: false })

/** A delete of a finished video refused for good (not throttled, not the upstream's own trouble). */
export const refusedDelete = () =>
  new GenerationError({ code: FAILED, message: GENERIC, retryable: false, transient: false })

/** The result is gone upstream (OpenAI's `expires_at` passed) before we re-hosted it. */
export const expired = () =>
  new GenerationError({
    code: FAILED,
    message: "The generated video expired before it could be stored.",
    retryable: true,
    transient: false
  })

/** Spellings of a safety refusal across OpenAI (`moderation_blocked`) and relays. */
const CONTENT_POLICY = /moderation|content[_ -]?(policy|filter)|safety|sensitive|policy[_ -]?violation/i

/** `error.code` (or `type`) of an OpenAI-style error object, if it has one. */
const errorCodeOf = (error: unknown): string | undefined => {
  if (typeof error !== "object" || error === null) return undefined
  const { code, type } = error as { code?: unknown; type?: unknown }
  return typeof code === "string" && code !== "" ? code : typeof type === "string" && type !== "" ? type : undefined
}

/** A failed task's `error` object as the task's failure: safety refusals and invalid inputs are final. */
export const fromTaskError = (error: unknown): GenerationError => {
  const code = errorCodeOf(error) ?? ""
  const message = typeof (error as { message?: unknown } | null)?.message === "string"
    ? (error as { message: string }).message
    : ""
  if (CONTENT_POLICY.test(code) || CONTENT_POLICY.test(message)) return contentPolicy()
  if (/^invalid/i.test(code)) return refused()
  return failedUpstream()
}

export const fromTransport = (error: HttpClientError.HttpClientError) =>
  certainlyNotSent(error) ? transient() : ambiguous()

/** A status the SDK itself retries: the upstream was busy or broken for a moment. */
const isBusy = (status: number) => status === 408 || status === 409 || status === 429 || status >= 500

/**
 * A non-2xx answer to a create. HTML bodies (a load balancer's 502 page)
 * are never read into the task; only a JSON error's code is looked at.
 */
export const fromCreateStatus = (status: number, headers: Headers, body: unknown): GenerationError => {
  const error = (body as { error?: unknown } | null)?.error
  if (CONTENT_POLICY.test(errorCodeOf(error) ?? "")) return contentPolicy()
  if (isBusy(status)) return transient(retryHintMs(headers, body))
  if (status === 401 || status === 402 || status === 403 || status === 404) return misconfigured()
  return refused()
}

/**
 * A non-200 answer to a content download. 404 and 410 mean the file is
 * gone (expired), which no later try can change; a refused key will not
 * change either. Anything else (busy, "not ready yet" from a relay that
 * said done too early) is tried again at the next poll, until the deadline.
 */
export const fromContentStatus = (status: number, headers: Headers): GenerationError => {
  if (status === 404 || status === 410) return expired()
  // The upstream did take the task, so this is no reason to go to another channel (no `notAccepted`).
  if (status === 401 || status === 403) return failedUpstream()
  return busy(retryHintMs(headers))
}
