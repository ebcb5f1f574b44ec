import type { HttpClientError } from "@effect/platform"
import { certainlyNotSent, FailureCodes, GenerationError, retryHintMs } from "../../src/channel/contract/Adapter.ts"

/**
 * What OpenRouter's refusals and a job's failures mean for a task
 * (docs/adapters/openrouter.md, Failures). OpenRouter answers errors as
 * `{ "error": { "code": <HTTP status>, "message", "metadata" } }`; its words
 * name models, providers and the operator's account, so they reach the log
 * and `task_attempts` only. Every message here is the gateway's own and the
 * code is the spec's `video_task_failed`.
 */

const FAILED = FailureCodes.videoFailed

type Headers = Readonly<Record<string, string | undefined>>

const make = (
  message: string,
  retryable: boolean,
  more: {
    transient?: boolean
    retryAfterMs?: number | undefined
    notAccepted?: boolean
    ambiguous?: boolean
    throttled?: boolean | undefined
  } = {}
) => new GenerationError({ code: FAILED, message, retryable, transient: false, ...more })

/** Throttled, overloaded or unreachable before sending: nothing was created, so this or another channel may try. */
export const transient = (retryAfterMs?: number, throttled?: boolean) =>
  make("The video service is busy. Create a new task to try again.", true, {
    transient: true,
    retryAfterMs,
    notAccepted: true,
    throttled
  })

/**
 * Sent, with no answer we can trust: a job may exist. OpenRouter has no
 * idempotency key and no list of jobs to find it in, so the engine fails the
 * task with its refund rather than risk a second charge.
 */
export const ambiguous = () =>
  make("The video service did not confirm the task. Create a new task to try again.", true, {
    transient: true,
    ambiguous: true
  })

/** The key, the credits (402) or the model: the operator's problem, and another channel may take the task. */
export const misconfigured = () =>
  make("The video service is temporarily unavailable. Create a new task to try again.", true, { notAccepted: true })

export const invalid = () =>
  make("The video service refused the parameters or reference images of this request.", false)

export const unsafe = () => make("The request or its result was refused by the content safety policy.", false)

/** A request the adapter does not send (the model has no field for it): the caller's words, final. */
export const unsupported = (message: string) => make(message, false)

/** The job ran and failed for its own reasons (or was cancelled upstream): a new task may well succeed. */
export const failedUpstream = () => make("The video could not be generated.", true)

/** A poll (or a download) that did not work this time: asked again, never sooner than the hint. */
export const pollFailed = (retryAfterMs?: number, throttled?: boolean) =>
  make("Polling the video service failed.", true, { transient: true, retryAfterMs, throttled })

/** A download that broke off, or content not ready yet: tried again until the deadline. */
export const fetchBroken = (retryAfterMs?: number) =>
  make("The video could not be downloaded.", true, { transient: true, retryAfterMs })

/** The job's output expired at OpenRouter before it was stored: the task fails with its refund. */
export const resultExpired = () => make("The generated video expired before it could be stored.", true)

/** Words of a safety refusal, in a job's `error` or a refusal's message or metadata. */
const SAFETY = /moderat|content[_ -]?(policy|filter)|safety|flagged|nsfw|sensitive|prohibited/i

export const isSafety = (text: unknown) => typeof text === "string" && SAFETY.test(text)

/** The refusal's message and metadata as one text, to look for a safety refusal in. */
const wordsOf = (body: unknown) => {
  const error = (body as { error?: { message?: unknown; metadata?: unknown } } | null)?.error
  return `${typeof error?.message === "string" ? error.message : ""} ${JSON.stringify(error?.metadata ?? null)}`
}

/**
 * A non-2xx answer to a create (the official client's error classes):
 * 429 and 500/502/503 were not taken (tried again, never sooner than
 * `Retry-After`); 504 and 524 (Cloudflare's edge time-out) may have run;
 * 401, 402 (no credits), 404 (no such model) and a 403 that is no safety
 * refusal are this channel's configuration; a safety refusal is final; 400,
 * 413, 422 and the other 4xx refuse the request itself.
 */
export const fromCreateStatus = (status: number, headers: Headers, body: unknown): GenerationError => {
  if (status === 504 || status === 524) return ambiguous()
  if (status === 408 || status === 429 || status >= 500) {
    return transient(retryHintMs(headers, body), status === 429)
  }
  if (isSafety(wordsOf(body))) return unsafe()
  if (status === 401 || status === 402 || status === 403 || status === 404) return misconfigured()
  return invalid()
}

/** A transport failure of a create: certainly never sent is transient, anything else ambiguous. */
export const fromTransport = (error: HttpClientError.HttpClientError) =>
  certainlyNotSent(error) ? transient() : ambiguous()

/**
 * A non-200 answer to a content download: 404 and 410 say the output is
 * gone (expired), which no later try changes; 409 (not ready yet), 429,
 * 5xx and the rest are tried again at the next poll, until the deadline.
 */
export const fromContentStatus = (status: number, headers: Headers): GenerationError =>
  status === 404 || status === 410 ? resultExpired() : fetchBroken(retryHintMs(headers))
