/**
 * The spec's codes for a task that failed in generation, spelled once: the
 * adapters report them (through the failure constructors or their own
 * mapping), the task kinds (tasks/VideoKind.ts, ImageKind.ts) name them for
 * the engine. Here, in the adapter contract, because an adapter may import
 * nothing else of the core.
 */
export const FailureCodes = {
  /** Any failure of a video task that is not about its reference media. */
  videoFailed: "video_task_failed",
  /** Any failure of an image task but a temporary unavailability. */
  imageFailed: "image_task_failed",
  /** The image service is temporarily unavailable (a business code, not an HTTP status); `retryable` true. */
  imageUnavailable: "524"
} as const
