import type { HttpClientError } from "@effect/platform"
import { certainlyNotSent, FailureCodes, GenerationError, retryHintMs } from "../../src/channel/contract/Adapter.ts"

/**
 * What a failed exchange with the upstream gateway means. The caller never
 * sees the upstream's words for it (its balance, its request ids): they
 * reach the operator's log and task_attempts only.
 */

export const FAILED_CODE = { video: FailureCodes.videoFailed, image: FailureCodes.imageFailed } as const
const UNAVAILABLE = { video: FailureCodes.videoFailed, image: FailureCodes.imageUnavailable } as const
const MESSAGE = {
  video: "The video could not be generated.",
  image: "The image service is temporarily unavailable."
} as const

export type Kind = "video" | "image"

/** Worth another try: the upstream was unreachable or busy for a moment, and took nothing (another channel may). */
export const transient = (kind: Kind, retryAfterMs?: number) =>
  new GenerationError({
    code: UNAVAILABLE[kind],
    message: MESSAGE[kind],
    retryable: true,
    transient: true,
    retryAfterMs,
    notAccepted: true
  })

/** The request was sent and may have been run: the engine asks `find`. */
export const ambiguous = (kind: Kind) =>
  new GenerationError({
    code: UNAVAILABLE[kind],
    message: MESSAGE[kind],
    retryable: true,
    transient: true,
    ambiguous: true
  })

/**
 * Refused for good here (a request the upstream will never take, or our
 * credentials or balance there refused). Only the latter (`retryable`) is
 * this channel's problem, so only then may another channel take the task.
 */
export const refused = (kind: Kind, retryable: boolean) =>
  new GenerationError({
    code: FAILED_CODE[kind],
    message: MESSAGE[kind],
    retryable,
    transient: false,
    notAccepted: retryable
  })

export const fromTransport = (kind: Kind, error: HttpClientError.HttpClientError) =>
  certainlyNotSent(error) ? transient(kind) : ambiguous(kind)

/**
 * A non-success answer: 429 and 5xx are tried again, as long as the upstream
 * asked (`Retry-After`); our credentials refused or our balance there spent
 * are the operator's problem, so the caller may try again later; any other
 * refusal is final.
 */
export const fromStatus = (
  kind: Kind,
  status: number,
  headers: Readonly<Record<string, string | undefined>>,
  body: unknown
) => {
  if (status === 429 || status >= 500) return transient(kind, retryHintMs(headers, body))
  return refused(kind, status === 401 || status === 402 || status === 403)
}
