import type { HttpClientError } from "@effect/platform"
import { certainlyNotSent, FailureCodes, GenerationError, retryHintMs } from "../../src/channel/contract/Adapter.ts"

/**
 * What Replicate's refusals and failures mean for a task
 * (docs/adapters/replicate.md, Failures), for either kind: a video task fails
 * with `video_task_failed`, an image task with `image_task_failed` (or the
 * spec's `524` while the service is unavailable). Messages are ours:
 * Replicate's `detail` and a prediction's `error` name models, versions and
 * the operator's account, so they reach the log and `task_attempts` only.
 */

export type Kind = "video" | "image"

export interface Failures {
  /** Throttled, overloaded or unreachable before sending: nothing was created. */
  readonly transient: (retryAfterMs?: number) => GenerationError
  /** Sent, with no answer we can trust: a prediction may exist (and Replicate has no way to find it). */
  readonly ambiguous: () => GenerationError
  /** The token, the account's credit or the model: the operator's problem; another channel may take the task. */
  readonly misconfigured: () => GenerationError
  /** Replicate refused the input (422): the same input fails again. */
  readonly invalid: () => GenerationError
  /** A request the adapter does not send (the model has no field for it). */
  readonly unsupported: (message: string) => GenerationError
  readonly unsafe: () => GenerationError
  /** A prediction that ended without output: `failed`, `canceled`, `aborted`. */
  readonly ended: (status: string) => GenerationError
  /** A poll that failed: asked again later, never sooner than the hint; `throttled` when it was a 429. */
  readonly pollFailed: (retryAfterMs?: number, throttled?: boolean) => GenerationError
  /** A download that broke off: tried again until the deadline. */
  readonly fetchBroken: () => GenerationError
  /** Replicate deleted the output (an hour after the prediction): the task fails with its refund. */
  readonly resultExpired: () => GenerationError
}

export const failuresFor = (kind: Kind): Failures => {
  const failed = kind === "video" ? FailureCodes.videoFailed : FailureCodes.imageFailed
  // An image service that is temporarily unavailable has its own code in the spec.
  const busy = kind === "video" ? FailureCodes.videoFailed : FailureCodes.imageUnavailable
  const service = `The ${kind} service`
  const make = (
    code: string,
    message: string,
    retryable: boolean,
    more: {
      transient?: boolean
      retryAfterMs?: number | undefined
      notAccepted?: boolean
      ambiguous?: boolean
      throttled?: boolean
    } = {}
  ) => new GenerationError({ code, message, retryable, transient: false, ...more })
  return {
    transient: (retryAfterMs) =>
      make(busy, `${service} is busy. Create a new task to try again.`, true, {
        transient: true,
        retryAfterMs,
        notAccepted: true
      }),
    ambiguous: () =>
      make(busy, `${service} did not confirm the task. Create a new task to try again.`, true, {
        transient: true,
        ambiguous: true
      }),
    misconfigured: () =>
      make(busy, `${service} is temporarily unavailable. Create a new task to try again.`, true, { notAccepted: true }),
    invalid: () => make(failed, `${service} refused the parameters or reference images of this request.`, false),
    unsupported: (message) => make(failed, message, false),
    unsafe: () => make(failed, "The request or its result was refused by the content safety policy.", false),
    ended: (status) =>
      make(
        failed,
        status === "aborted"
          ? `${service} did not start the task in time.`
          : status === "canceled"
          ? `The task was cancelled by ${service.toLowerCase()}.`
          : `The ${kind} could not be generated.`,
        true
      ),
    pollFailed: (retryAfterMs, throttled) =>
      make(failed, `Polling ${service.toLowerCase()} failed.`, true, { transient: true, retryAfterMs, throttled }),
    fetchBroken: () => make(failed, `The ${kind} could not be downloaded.`, true, { transient: true }),
    resultExpired: () => make(failed, `The generated ${kind} expired before it could be stored.`, true)
  }
}

/**
 * How long Replicate asked us to wait: `Retry-After` where sent, else the
 * "resets in ~30s" of its 429 `detail` (the official client ignores both and
 * retries on its own schedule).
 */
export const throttleHintMs = (headers: Readonly<Record<string, string | undefined>>, body: unknown) => {
  const header = retryHintMs(headers, body)
  if (header !== undefined) return header
  const detail = (body as { detail?: unknown } | null)?.detail
  const match = typeof detail === "string" ? /resets in ~?(\d+(?:\.\d+)?)\s*s/.exec(detail) : null
  return match ? Math.min(Number(match[1]) * 1000, 10 * 60 * 1000) : undefined
}

/** A prediction's `error` that says the input or the output was flagged. */
export const isSafety = (error: unknown) =>
  typeof error === "string" && /nsfw|sensitive|flagged|safety|content policy/i.test(error)

/**
 * A non-2xx answer to a create. 429 and 500/502/503 are "not taken" (tried
 * again, never sooner than the hint). 504 is a proxy that gave up waiting:
 * the prediction may exist. 401/403 (token), 402 (no credit) and 404 (no such
 * model or version) are this channel's configuration. 422 and other 4xx
 * refuse the input itself.
 */
export const fromCreateStatus = (
  f: Failures,
  status: number,
  headers: Readonly<Record<string, string | undefined>>,
  body: unknown
): GenerationError => {
  if (status === 504) return f.ambiguous()
  if (status === 429 || status >= 500) return f.transient(throttleHintMs(headers, body))
  if (status === 401 || status === 402 || status === 403 || status === 404) return f.misconfigured()
  if (isSafety((body as { detail?: unknown } | null)?.detail)) return f.unsafe()
  return f.invalid()
}

/** A transport failure: certainly never sent is transient, anything else ambiguous. */
export const fromTransport = (f: Failures) => (error: HttpClientError.HttpClientError) =>
  certainlyNotSent(error) ? f.transient() : f.ambiguous()
