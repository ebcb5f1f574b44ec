import { DURATION_EXCEEDED, DURATION_UNREADABLE } from "../catalog/Errors.ts"
import { FailureCodes } from "../channel/contract/FailureCodes.ts"
import type { TaskFailure } from "./TaskFailure.ts"

/**
 * Everything the video kind names: its failure codes (spec: Errors, terminal
 * task failures) and its webhook event types. Plans, the reaper, reference
 * checks and the event outbox read them here, so a code is spelled once.
 */
export const VideoKind = {
  kind: "video",
  codes: {
    /** Any other upstream or internal failure. */
    failed: FailureCodes.videoFailed,
    durationUnreadable: DURATION_UNREADABLE,
    durationExceeded: DURATION_EXCEEDED
  },
  events: { succeeded: "video.task.succeeded", failed: "video.task.failed" }
} as const

/** What a failure the caller should not see the details of becomes; also what spent attempts become. */
export const VIDEO_FAILURE: TaskFailure = {
  code: VideoKind.codes.failed,
  message: "The video could not be generated.",
  retryable: true
}
