import type { HttpClientError } from "@effect/platform"
import { certainlyNotSent, GenerationError, retryHintMs } from "../../src/channel/Adapter.ts"

/**
 * What Ark's refusals and failures mean for the task (PROTOCOLS.md §1.9).
 * Every failure is the spec's `video_task_failed` with a message of ours:
 * Ark's codes and messages carry request ids, endpoint ids and the
 * operator's account state, so they reach the log and `task_attempts` only.
 * `retryable` says whether a fresh task is worth creating.
 */

const FAILED = "video_task_failed"

const failure = (
  message: string,
  retryable: boolean,
  more: { transient?: boolean; retryAfterMs?: number | undefined; notAccepted?: boolean; ambiguous?: boolean } = {}
) => new GenerationError({ code: FAILED, message, retryable, transient: false, ...more })

/** Throttled, overloaded or unreachable before sending: nothing was created, so this or another channel may try. */
export const transient = (retryAfterMs?: number) =>
  failure("The video service is busy. Create a new task to try again.", true, {
    transient: true,
    retryAfterMs,
    notAccepted: true
  })

/**
 * Sent, and no answer we can trust: Ark may hold a task we cannot name (it
 * has no idempotency key and no field of ours to look a task up by), so the
 * engine fails the task with its refund instead of risking a second charge.
 */
export const ambiguous = () =>
  failure("The video service did not confirm the task. Create a new task to try again.", true, {
    transient: true,
    ambiguous: true
  })

/** This channel's key, account or endpoint refused: the operator's problem, and another channel may take the task. */
const misconfigured = () =>
  failure("The video service is temporarily unavailable. Create a new task to try again.", true, {
    notAccepted: true
  })

const unsafe = () => failure("The request or its result was refused by the content safety policy.", false)

const invalid = () => failure("The video service refused the parameters or reference media of this request.", false)

/** A request this adapter does not send at all (a mode or option Ark has no field for). */
export const unsupported = (message: string) => failure(message, false)

/** A download that broke off, or a file that is not there yet: asked again until the deadline. */
export const fetchBroken = () => failure("The video could not be downloaded.", true, { transient: true })

/** The 24-hour result link has lapsed: the video is gone upstream, so the task fails with its refund. */
export const resultExpired = () => failure("The generated video expired before it could be stored.", true)

export const fromTransport = (error: HttpClientError.HttpClientError) =>
  certainlyNotSent(error) ? transient() : ambiguous()

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
  failure("Polling the video service failed.", true, { transient: true, retryAfterMs: retryHintMs(headers, body) })

/**
 * A task Ark ended without a video (§1.7). A safety refusal of the output
 * or a refused parameter will fail again as it is; anything else (an
 * internal error, `expired` past `execution_expires_after`, `cancelled` by
 * the operator in Ark's console) is worth a fresh task.
 */
export const fromTaskFailure = (status: string, code: string): GenerationError => {
  if (isSafety(code)) return unsafe()
  if (isParameter(code)) return invalid()
  if (status === "expired") return failure("The video service did not finish the task in time.", true)
  if (status === "cancelled") return failure("The task was cancelled by the video service.", true)
  return failure("The video could not be generated.", true)
}
