import { IMAGE_FAILURE, IMAGE_UNAVAILABLE, ImageKind } from "./ImageKind.ts"
import type { TaskKind } from "./Task.ts"
import type { TaskFailure } from "./TaskFailure.ts"
import { VIDEO_FAILURE, VideoKind } from "./VideoKind.ts"

/** The kind modules by the task's `kind` column. */
export const KINDS = { video: VideoKind, image: ImageKind } as const

/** The webhook event types of the task kinds (spec: Webhooks). */
export type TaskEventType = (typeof KINDS)[TaskKind]["events"][keyof (typeof KINDS)[TaskKind]["events"]]

export const eventTypeOf = (kind: TaskKind, outcome: "succeeded" | "failed"): TaskEventType =>
  KINDS[kind].events[outcome]

/** What a failure the caller should not see the details of becomes, per kind. */
export const internalFailureOf = (kind: TaskKind): TaskFailure => (kind === "video" ? VIDEO_FAILURE : IMAGE_FAILURE)

/**
 * What a task whose claims are all spent (its workers crashed or stalled each
 * time) becomes, per kind: for images that is the spec's temporary
 * unavailability, `524` with `retryable` true.
 */
export const attemptsSpentFailureOf = (
  kind: TaskKind
): TaskFailure => (kind === "video" ? VIDEO_FAILURE : IMAGE_UNAVAILABLE)
