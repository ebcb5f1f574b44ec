import { type GenerationError, retryHintMs } from "../../src/channel/contract/Adapter.ts"
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
 * What DashScope's refusals and failed tasks mean for the task
 * (docs/adapters/alibaba.md, Failures). DashScope answers a refusal with an
 * HTTP status and `{ "request_id", "code", "message" }`; a failed task with
 * `output.code` and `output.message`. Every failure is the spec's
 * `video_task_failed` with a message of ours: the codes, messages and
 * request ids reach the log and `task_attempts` only.
 *
 * Codes: https://www.alibabacloud.com/help/en/model-studio/developer-reference/error-code
 */

type Headers = Readonly<Record<string, string | undefined>>

/** DashScope's `code` of a refusal (top level) or of a failed task (`output.code`). */
export const codeOf = (body: unknown): string | undefined => {
  const b = body as { code?: unknown; output?: { code?: unknown } } | null
  const code = b?.code ?? b?.output?.code
  return typeof code === "string" && code !== "" ? code : undefined
}

/** The key, the account or its standing: the operator's problem, and another channel may take the task. */
const isAccountRefusal = (code: string) =>
  code === "InvalidApiKey" || code === "Arrearage" || code === "AccessDenied" ||
  code.startsWith("AccessDenied.") || code === "Model.AccessDenied" || code === "ModelNotFound" ||
  code === "Model.NotFound" || code.startsWith("FreeTierOnly") || code === "AllocationQuota.FreeTierOnly"

/** A content-moderation refusal of the input or of the output. */
const isUnsafe = (code: string) =>
  code === "DataInspectionFailed" || code.startsWith("DataInspection") || code === "IPInfringementSuspect" ||
  code.endsWith(".DataInspection")

/** The request itself is wrong: sending it again gives the same answer. */
const isInvalid = (code: string) =>
  code === "InvalidParameter" || code.startsWith("InvalidParameter.") || code.startsWith("BadRequest") ||
  code === "InvalidURL" || code.startsWith("InvalidURL.") || code === "InvalidFile" || code.startsWith("InvalidFile.")

/** A refusal of a create: by DashScope's code first, then by HTTP status for answers without one (a proxy's page). */
export const fromCreateStatus = (status: number, headers: Headers, body: unknown): GenerationError => {
  const code = codeOf(body) ?? ""
  const hint = retryHintMs(headers, body)
  // Throttling, Throttling.RateQuota (requests per second), Throttling.AllocationQuota (the account's quota).
  if (status === 429 || code.startsWith("Throttling")) return transient(hint, code !== "Throttling.AllocationQuota")
  if (isAccountRefusal(code)) return misconfigured()
  if (isUnsafe(code)) return unsafe()
  if (status === 504) return ambiguous()
  if (status >= 500) return transient(hint)
  if (status === 401 || status === 403 || status === 404) return misconfigured()
  return invalid()
}

/** A failed status request or cancel changes nothing: asked again later, never sooner than a hint. */
export const fromReadStatus = (status: number, headers: Headers, body: unknown) =>
  videoFailure("Polling the video service failed.", true, {
    transient: true,
    retryAfterMs: retryHintMs(headers, body),
    throttled: status === 429 ? codeOf(body) !== "Throttling.AllocationQuota" : undefined
  })

/**
 * A task DashScope ended FAILED (HTTP 200): `output.code` says why. A
 * content refusal or a refused input fails again as it is; anything else
 * (InternalError, a time-out of the model) is worth a fresh task.
 */
export const fromTaskFailure = (code: string | undefined): GenerationError => {
  if (code !== undefined && isUnsafe(code)) return unsafe()
  if (code !== undefined && isInvalid(code)) return invalid()
  return videoFailure("The video could not be generated.", true)
}
