import { type GenerationError, retryHintMs, type UpstreamAnswerDetail } from "../../src/channel/contract/Adapter.ts"
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
  transient,
  unsupported
} from "../../src/channel/contract/VideoFailures.ts"

/**
 * What Runway's refusals and failed tasks mean for the task
 * (docs/adapters/runway.md, Failures). Every failure is the spec's
 * `video_task_failed` with a message of ours: Runway's words, failure codes
 * and task ids reach the log and `task_attempts` only (Runway itself asks
 * that its failure messages not be shown to users).
 */

type Headers = Readonly<Record<string, string | undefined>>

/**
 * Runway's error envelope, `{ "error": "human-readable explanation" }`
 * (docs.dev.runwayml.com/api-details/errors), as the operator's detail: the
 * contract's reader looks for an `error` object, Runway's is a string.
 */
export const runwayDetail = (status: number, body: unknown, text: string): UpstreamAnswerDetail => {
  const error = (body as { error?: unknown } | null)?.error
  const message = typeof error === "string" ? error : text.trim()
  return { status, message: message.slice(0, 500) }
}

/**
 * A refusal of a create, by Runway's table of HTTP errors: 400 is the
 * request's own problem (final); 401 the key (another channel may take the
 * task); 404 and 405 an address or model this account cannot reach (the
 * same); 429 too many requests or the account's limits reached, and 502 and
 * 503 load shedding, all safe to retry; 504 "overloaded and not able to
 * satisfy the request" may have been cut off after the task was made, so it
 * is never sent again blindly.
 */
export const fromCreateStatus = (status: number, headers: Headers, body: unknown): GenerationError => {
  if (status === 504) return ambiguous()
  if (status === 429) return transient(retryHintMs(headers, body), true)
  if (status >= 500) return transient(retryHintMs(headers, body))
  if (status === 401 || status === 403 || status === 404 || status === 405) return misconfigured()
  return invalid()
}

/** A status read, cancel or delete that did not work this time: asked again later, never sooner than the hint. */
export const pollFailed = (headers: Headers = {}, status?: number) =>
  videoFailure("Polling the video service failed.", true, {
    transient: true,
    retryAfterMs: retryHintMs(headers),
    throttled: status === undefined ? undefined : status === 429
  })

/** A delete of a finished task refused for good (not throttled, not Runway's own trouble). */
export const refusedDelete = () => videoFailure("The video service refused to delete the task.", false)

/**
 * A task Runway ended FAILED, by its `failureCode`
 * (docs.dev.runwayml.com/api-details/task-failures): `SAFETY.*` and
 * `INPUT_PREPROCESSING.SAFETY.*` are content moderation, not to be retried;
 * `ASSET.INVALID` an input Runway could not use; `INTERNAL.BAD_OUTPUT.*`,
 * `INPUT_PREPROCESSING.INTERNAL` and anything else are worth a fresh task.
 */
export const fromFailureCode = (code: string | undefined): GenerationError => {
  if (code !== undefined && (code.startsWith("SAFETY.") || code.startsWith("INPUT_PREPROCESSING.SAFETY"))) {
    return unsafe()
  }
  if (code !== undefined && code.startsWith("ASSET.INVALID")) return invalid()
  return videoFailure("The video could not be generated.", true)
}

/** A task someone cancelled or deleted upstream (not us: our cancel ends the task first). */
export const cancelledUpstream = () => videoFailure("The video could not be generated.", true)
