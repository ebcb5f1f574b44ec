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
 * What Kling's refusals and failures mean for the task (docs/adapters/kling.md,
 * Failures). Every failure is the spec's `video_task_failed` with a message of
 * ours: Kling's codes, messages and request ids reach the log and
 * `task_attempts` only. `retryable` says whether a fresh task is worth
 * creating; `notAccepted` lets the engine move the task to the model's next
 * channel.
 */

/** Kling's documented advice for 1303 (too many tasks in flight): back off, starting at a second or more. */
export const CONCURRENCY_BACKOFF_MS = 2000

/** Kling's numeric code in `{"code","message","request_id"}`; HTML pages from a proxy have none. */
export const codeOf = (body: unknown): number | undefined => {
  const code = (body as { code?: unknown } | null)?.code
  return typeof code === "number" ? code : undefined
}

/** Whether the body is Kling's own envelope (not a proxy's page). */
export const isEnvelope = (body: unknown) => codeOf(body) !== undefined

/**
 * A refusal of a create, by Kling's code first (429 carries both throttling
 * and billing), then by HTTP status for answers without one.
 */
export const fromCreateStatus = (
  status: number,
  headers: Readonly<Record<string, string | undefined>>,
  body: unknown
): GenerationError => {
  const code = codeOf(body)
  const hint = retryHintMs(headers, body)
  switch (code) {
    case 1302:
      return transient(hint, true)
    case 1303:
      // The account's parallel tasks, not its request rate: a slower pace would not help.
      return transient(Math.max(hint ?? 0, CONCURRENCY_BACKOFF_MS), false)
    case 1300:
    case 1301:
      return unsafe()
    case 1200:
    case 1201:
      return invalid()
    case 5000:
    case 5001:
      return transient(hint)
    // 5002: Kling's own time-out, which may have created the task.
    case 5002:
      return ambiguous()
  }
  // 1000–1004 (auth), 1100–1103 (account, arrears, pack, permission), 1202/1203 (no such model), 1304 (IP policy).
  // Sent with a 429 some of them, none is about the request rate.
  if (code !== undefined && code >= 1000 && code < 1400) {
    const refused = misconfigured()
    // `message` is not an own enumerable field of an Error, so the spread alone would leave it out.
    return new GenerationError({ ...refused, message: refused.message, throttled: false })
  }
  if (status === 504) return ambiguous()
  if (status === 429 || status >= 500) return transient(hint)
  if (status === 401 || status === 403 || status === 404) return misconfigured()
  return invalid()
}

/** Kling's authentication codes (1000–1004): the key, or the token signed with it, was refused. */
export const isAuthRefused = (code: number | undefined) => code !== undefined && code >= 1000 && code <= 1004

/** Auth codes after which the legacy token is minted again. */
export const isTokenRefused = (code: number | undefined) => code === 1003 || code === 1004

/** A failed poll changes nothing upstream: the engine asks again later, never sooner than the hint. */
export const fromPollStatus = (headers: Readonly<Record<string, string | undefined>>, body: unknown) =>
  videoFailure("Polling the video service failed.", true, {
    transient: true,
    retryAfterMs: codeOf(body) === 1303
      ? Math.max(retryHintMs(headers, body) ?? 0, CONCURRENCY_BACKOFF_MS)
      : retryHintMs(headers, body),
    // Only Kling's rate code asks for a slower pace; its 429s for billing and concurrency do not.
    throttled: codeOf(body) === undefined ? undefined : codeOf(body) === 1302
  })

const isSafety = (msg: string) => /risk|sensitive|safety|violat|prohibit|inappropriate|风控|敏感|违规/i.test(msg)
const isParameter = (msg: string) => /invalid|not supported|unsupported|parameter|too (large|small|long)/i.test(msg)

/**
 * A task Kling ended `failed` (HTTP 200, code 0): the reason is only in
 * `task_status_msg` (legacy) or `message` (current). A safety refusal or a
 * refused input fails again as it is; anything else is worth a fresh task.
 */
export const fromTaskFailure = (reason: string): GenerationError => {
  if (isSafety(reason)) return unsafe()
  if (isParameter(reason)) return invalid()
  return videoFailure("The video could not be generated.", true)
}
