import { FailureCodes } from "../channel/contract/FailureCodes.ts"
import type { TaskFailure } from "./TaskFailure.ts"

/**
 * Everything the image kind names: its failure codes (spec: Errors, terminal
 * task failures; `524` is a business code, not an HTTP status) and its
 * webhook event types. Plans, the reaper, the synchronous image endpoints and
 * the event outbox read them here, so a code is spelled once.
 */
export const ImageKind = {
  kind: "image",
  codes: {
    failed: FailureCodes.imageFailed,
    /** The image service is temporarily unavailable; `retryable` true. */
    unavailable: FailureCodes.imageUnavailable
  },
  events: { succeeded: "image.task.succeeded", failed: "image.task.failed" }
} as const

/** What a failure the caller should not see the details of becomes. */
export const IMAGE_FAILURE: TaskFailure = {
  code: ImageKind.codes.failed,
  message: "The image could not be generated.",
  retryable: true
}

/** The spec's temporary unavailability; no internal detail is given. */
export const IMAGE_UNAVAILABLE: TaskFailure = {
  code: ImageKind.codes.unavailable,
  message: "The image service is temporarily unavailable. Create a new task to try again.",
  retryable: true
}
