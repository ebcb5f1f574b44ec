import { type GenerationError, retryHintMs } from "../../src/channel/contract/Adapter.ts"
import {
  ambiguous,
  invalid as refusedRequest,
  misconfigured,
  resultExpired,
  transient,
  unsafe,
  videoFailure
} from "../../src/channel/contract/VideoFailures.ts"

/**
 * What OpenRouter's refusals and a job's failures mean for a task
 * (docs/adapters/openrouter.md, Failures), on the contract's video failures
 * (VideoFailures.ts). OpenRouter answers errors as
 * `{ "error": { "code": <HTTP status>, "message", "metadata" } }`; its words
 * name models, providers and the operator's account, so they reach the log
 * and `task_attempts` only. Every message here is the gateway's own and the
 * code is the spec's `video_task_failed`.
 *
 * A create whose answer is lost (`ambiguous`) cannot be looked for:
 * OpenRouter has no idempotency key and no list of jobs, so the engine fails
 * the task with its refund rather than risk a second charge. A refused key,
 * credits (402) or model is `misconfigured`: another channel may take the task.
 */

export {
  ambiguous,
  fromTransport,
  misconfigured,
  resultExpired,
  transient,
  unsafe,
  unsupported
} from "../../src/channel/contract/VideoFailures.ts"

type Headers = Readonly<Record<string, string | undefined>>

/** The request itself refused: its parameters or reference images. */
export const invalid = () => refusedRequest("reference images")

/** The job ran and failed for its own reasons (or was cancelled upstream): a new task may well succeed. */
export const failedUpstream = () => videoFailure("The video could not be generated.", true)

/** A download that broke off, or content not ready yet: tried again until the deadline, never sooner than the hint. */
export const fetchBroken = (retryAfterMs?: number) =>
  videoFailure("The video could not be downloaded.", true, { transient: true, retryAfterMs })

/** A poll (or a download) that did not work this time: asked again, never sooner than the hint. */
export const pollFailed = (retryAfterMs?: number, throttled?: boolean) =>
  videoFailure("Polling the video service failed.", true, { transient: true, retryAfterMs, throttled })

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

/**
 * A non-200 answer to a content download: 404 and 410 say the output is
 * gone (expired), which no later try changes; 409 (not ready yet), 429,
 * 5xx and the rest are tried again at the next poll, until the deadline.
 */
export const fromContentStatus = (status: number, headers: Headers): GenerationError =>
  status === 404 || status === 410 ? resultExpired() : fetchBroken(retryHintMs(headers))
