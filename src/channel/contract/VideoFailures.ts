import type { HttpClientError } from "@effect/platform"
import { FailureCodes } from "./FailureCodes.ts"
import { GenerationError } from "./Generation.ts"
import { certainlyNotSent } from "./Transport.ts"

/**
 * The failures a video adapter reports, in the spec's words: every one is
 * `video_task_failed` with a message of ours, never the upstream's (its
 * codes and messages carry request ids, projects, quotas and account state,
 * which belong in the log and `task_attempts`). `retryable` says whether a
 * fresh task is worth creating; the other fields tell the engine what the
 * upstream may hold (Generation.ts). Each adapter's Failures.ts maps its
 * protocol's answers onto these.
 */

const FAILED = FailureCodes.videoFailed

export const videoFailure = (
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

/**
 * Throttled, overloaded or unreachable before sending: nothing was created, so this or another channel may try.
 * `throttled` where the adapter knows whether the upstream said "too many requests" (Generation.ts).
 */
export const transient = (retryAfterMs?: number, throttled?: boolean) =>
  videoFailure("The video service is busy. Create a new task to try again.", true, {
    transient: true,
    retryAfterMs,
    notAccepted: true,
    throttled
  })

/**
 * Sent, and no answer we can trust: the upstream may hold a task. The engine
 * asks the adapter's `find` where there is one, and otherwise fails the task
 * with its refund rather than risk a second charge.
 */
export const ambiguous = () =>
  videoFailure("The video service did not confirm the task. Create a new task to try again.", true, {
    transient: true,
    ambiguous: true
  })

/** The channel's key, account or quota refused: the operator's problem, and another channel may take the task. */
export const misconfigured = () =>
  videoFailure("The video service is temporarily unavailable. Create a new task to try again.", true, {
    notAccepted: true
  })

export const unsafe = () => videoFailure("The request or its result was refused by the content safety policy.", false)

/** The upstream refused the request itself: sending it again gives the same answer. */
export const invalid = (references: "reference media" | "reference images" = "reference media") =>
  videoFailure(`The video service refused the parameters or ${references} of this request.`, false)

/** A request the adapter does not send at all (a mode or option its protocol has no field for). */
export const unsupported = (message: string) => videoFailure(message, false)

/** A download that broke off, or a file that is not there yet: asked again until the deadline. */
export const fetchBroken = () => videoFailure("The video could not be downloaded.", true, { transient: true })

/** The result link has lapsed: the video is gone upstream, so the task fails with its refund. */
export const resultExpired = () => videoFailure("The generated video expired before it could be stored.", true)

/** A transport failure: certainly never sent is transient, anything else ambiguous. */
export const fromTransport = (error: HttpClientError.HttpClientError) =>
  certainlyNotSent(error) ? transient() : ambiguous()
