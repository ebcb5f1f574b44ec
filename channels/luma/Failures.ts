import { GenerationError, retryHintMs, type UpstreamAnswerDetail } from "../../src/channel/contract/Adapter.ts"
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
  resultExpired,
  transient
} from "../../src/channel/contract/VideoFailures.ts"

/**
 * What Luma's refusals and failures mean for a task (docs/adapters/luma.md,
 * Failures). Every failure is the spec's `video_task_failed` with a message
 * of ours: Luma's `detail` and `failure_reason` reach the log and
 * `task_attempts` only (`upstream`). Luma answers an error as
 * `{"detail": "…"}` (its API reference's `Error` object); a proxy's HTML page
 * has none.
 */

type Headers = Readonly<Record<string, string | undefined>>

/** Luma's `detail`, when the body is its error object. */
export const detailOf = (body: unknown): string | undefined => {
  const detail = (body as { detail?: unknown } | null)?.detail
  return typeof detail === "string" ? detail : undefined
}

/** Luma's answer, for operators: its status and `detail`. */
export const upstreamOf = (status: number, body: unknown): UpstreamAnswerDetail => ({
  status,
  message: detailOf(body)?.slice(0, 500)
})

/**
 * Luma's moderation words (its Errors page): "Contains blacklisted words",
 * "Frame moderation failed", "Advanced prompt moderation failed".
 */
const MODERATION = /moderation|blacklisted|content polic|nsfw|unsafe/i

/** A status or delete that did not work this time: asked again later (`throttled`: a 429). */
export const busy = (headers: Headers = {}, body: unknown = null, status?: number) =>
  new GenerationError({
    code: "video_task_failed",
    message: "Polling the video service failed.",
    retryable: true,
    transient: true,
    retryAfterMs: retryHintMs(headers, body),
    throttled: status === undefined ? undefined : status === 429,
    upstream: status === undefined ? undefined : upstreamOf(status, body)
  })

/** A refused create, by HTTP status, then Luma's words. */
export const fromCreate = (status: number, headers: Headers, body: unknown): GenerationError => {
  // A gateway time-out: the create may have run upstream.
  if (status === 504) return ambiguous()
  // Throttled (Luma's requests a minute or its concurrent generations) or overloaded: nothing was created.
  if (status === 429 || status === 408 || status >= 500) {
    return transient(retryHintMs(headers, body), status === 429 ? true : undefined)
  }
  // The key, the account's credits or its access: the operator's problem, and another channel may take it.
  if (status === 401 || status === 402 || status === 403) return misconfigured()
  // No such route at this base URL: a misconfigured channel, not the caller's request.
  if (status === 404 || status === 405) return misconfigured()
  if (MODERATION.test(detailOf(body) ?? "")) return unsafe()
  // 400 and 422: Luma's validation of the request ("Prompt is too short…", a keyframe it cannot use).
  return invalid("reference images")
}

/**
 * A failed generation's `failure_reason` (Luma's Errors page, "After
 * submission"): moderation is final; keyframes Luma could not read are the
 * caller's images, final too; anything else (Luma's own trouble) is worth a
 * fresh task.
 */
export const fromFailureReason = (reason: string | undefined): GenerationError => {
  const text = reason ?? ""
  if (MODERATION.test(text)) return unsafe()
  if (/input frames|keyframe|read user input/i.test(text)) {
    return videoFailure("The video service could not read the reference images of this request.", false)
  }
  return videoFailure("The video could not be generated.", true)
}

/** A delete refused for good (not throttled, not Luma's own trouble). */
export const refusedDelete = () => videoFailure("The video service refused to delete the video.", false)
