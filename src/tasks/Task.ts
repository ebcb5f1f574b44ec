import { Schema } from "effect"

export const TaskStatus = Schema.Literal("queued", "in_progress", "succeeded", "failed")
export type TaskStatus = typeof TaskStatus.Type

// The kinds are the adapter contract's (an adapter serves some of them); tasks name them from there.
export { TaskKind } from "../channel/contract/Adapter.ts"

export const TaskError = Schema.Struct({
  code: Schema.String,
  message: Schema.String,
  retryable: Schema.Boolean
})

/**
 * Present only once the file is past its group's retention and removed
 * (docs/api.md, Retention): `expired: true` and when (`expires_at`); the
 * item is otherwise as the task finished.
 */
const Expiry = {
  expired: Schema.optional(Schema.Literal(true)),
  expires_at: Schema.optional(Schema.Int)
}

export const VideoResultItem = Schema.Struct({
  asset_id: Schema.String,
  index: Schema.Int,
  url: Schema.String,
  mime_type: Schema.String,
  filename: Schema.optional(Schema.String),
  width: Schema.optional(Schema.Int),
  height: Schema.optional(Schema.Int),
  duration_ms: Schema.Int,
  temporary: Schema.Boolean,
  url_auth: Schema.Literal("none", "resource_api_key"),
  ...Expiry
})

export const ImageResultItem = Schema.Struct({
  asset_id: Schema.String,
  url: Schema.String,
  mime_type: Schema.String,
  format: Schema.String,
  width: Schema.Int,
  height: Schema.Int,
  size_bytes: Schema.Int,
  filename: Schema.String,
  /** As a video item's: whether `url` needs the owning account's resource key (beyond the spec's item). */
  url_auth: Schema.Literal("none", "resource_api_key"),
  ...Expiry
})

const Timestamps = {
  created_at: Schema.Int,
  started_at: Schema.NullOr(Schema.Int),
  completed_at: Schema.NullOr(Schema.Int),
  updated_at: Schema.Int
}

/** The video task object of the spec. */
export const VideoTask = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("video.task"),
  model: Schema.String,
  operation: Schema.Literal("generation"),
  status: TaskStatus,
  progress: Schema.Int,
  result: Schema.NullOr(Schema.Struct({ videos: Schema.Array(VideoResultItem) })),
  error: Schema.NullOr(TaskError),
  client_reference_id: Schema.optional(Schema.String),
  metadata: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  ...Timestamps
})
export type VideoTask = typeof VideoTask.Type

/** The image task object of the spec. */
export const ImageTask = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("image.task"),
  model: Schema.String,
  operation: Schema.Literal("generation", "edit"),
  status: TaskStatus,
  progress: Schema.Int,
  result: Schema.NullOr(Schema.Struct({ images: Schema.Array(ImageResultItem) })),
  usage: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  error: Schema.NullOr(TaskError),
  client_reference_id: Schema.optional(Schema.String),
  metadata: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  ...Timestamps
})
export type ImageTask = typeof ImageTask.Type
