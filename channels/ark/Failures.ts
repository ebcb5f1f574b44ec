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
  resultExpired,
  transient,
  unsupported
} from "../../src/channel/contract/VideoFailures.ts"

/**
 * What Ark's refusals and failures mean for the task (docs/adapters/ark.md,
 * Failures). Every failure is the spec's `video_task_failed` with a message of
 * ours: Ark's codes and messages carry request ids, endpoint ids and the
 * operator's account state, so they reach the log and `task_attempts` only.
 * `retryable` says whether a fresh task is worth creating.
 */

const isSafety = (code: string) => /Sensitive|Moderation|PolicyViolation/i.test(code)
const isParameter = (code: string) => /^(InvalidParameter|MissingParameter|InvalidArgument)/.test(code)

/** Ark's error code in `{"error":{"code",...}}`; HTML pages from a proxy have none. */
export const errorCodeOf = (body: unknown): string => {
  const code = (body as { error?: { code?: unknown } } | null)?.error?.code
  return typeof code === "string" ? code : ""
}

/**
 * A non-2xx answer to a create. 429 and 500/502/503 are "not taken" and
 * tried again (Retry-After honoured, though Ark documents none). 504 is a
 * proxy that gave up waiting for Ark, which may have created the task:
 * ambiguous. 401/403 and an unknown or closed endpoint are this channel's
 * configuration. Any other 4xx refuses the request itself.
 */
export const fromCreateStatus = (
  status: number,
  headers: Readonly<Record<string, string | undefined>>,
  body: unknown
): GenerationError => {
  const code = errorCodeOf(body)
  if (status === 504) return ambiguous()
  if (status === 429 || status >= 500) return transient(retryHintMs(headers, body))
  if (isSafety(code)) return unsafe()
  if (status === 401 || status === 403 || status === 404 || code.startsWith("InvalidEndpoint")) return misconfigured()
  return invalid()
}

/**
 * A failed poll changes nothing upstream: the engine asks again later,
 * never sooner than the hint, until the task's deadline.
 */
export const fromPollStatus = (headers: Readonly<Record<string, string | undefined>>, body: unknown) =>
  videoFailure("Polling the video service failed.", true, { transient: true, retryAfterMs: retryHintMs(headers, body) })

/**
 * A task Ark ended without a video (docs/adapters/ark.md, States and polling).
 * A safety refusal of the output or a refused parameter will fail again as it
 * is; anything else (an internal error, `expired` past
 * `execution_expires_after`, `cancelled` by the operator in Ark's console) is
 * worth a fresh task.
 */
export const fromTaskFailure = (status: string, code: string): GenerationError => {
  if (isSafety(code)) return unsafe()
  if (isParameter(code)) return invalid()
  if (status === "expired") return videoFailure("The video service did not finish the task in time.", true)
  if (status === "cancelled") return videoFailure("The task was cancelled by the video service.", true)
  return videoFailure("The video could not be generated.", true)
}
