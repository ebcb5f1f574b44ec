import { Schema } from "effect"
import { failure } from "../platform/Failure.ts"
import { ImageKind } from "../tasks/ImageKind.ts"

/** The synchronous image endpoints: the task failed with `code`: 502 (docs/api.md, Synchronous image endpoints). */
export class ImageTaskFailed extends Schema.TaggedError<ImageTaskFailed>()("ImageTaskFailed", {
  ...failure(502),
  code: Schema.String,
  message: Schema.String
}) {}

/**
 * The synchronous image endpoints: the task failed as `524`, temporarily unavailable: 503 + Retry-After
 * (docs/api.md, Synchronous image endpoints).
 */
export class ImageServiceUnavailable extends Schema.TaggedError<ImageServiceUnavailable>()("ImageServiceUnavailable", {
  ...failure(503, ImageKind.codes.unavailable),
  message: Schema.String,
  retryAfter: Schema.Number
}) {}
