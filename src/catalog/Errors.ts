import { Schema } from "effect"
import { failure } from "../platform/Failure.ts"

/** The 400s of request validation derived from the capability tables (spec: Errors). */

/**
 * The spec's two codes for reference media durations: a 400 at creation when
 * the durations are known (confirmed uploads), a task failure when found
 * later (external URLs). Shared by uploads, creation and the video kind.
 */
export const DURATION_UNREADABLE = "invalid_reference_media_duration"
export const DURATION_EXCEEDED = "reference_media_duration_exceeded"

export const InvalidRequestCode = Schema.Literal(
  "invalid_request",
  "invalid_provider_options",
  "invalid_video_parameter",
  "invalid_video_duration",
  "invalid_video_aspect_ratio",
  "video_duration_required",
  "unsupported_video_operation",
  "unsupported_reference_mode",
  "unsupported_image_operation",
  "invalid_image_parameter",
  // Reference media checked at creation (confirmed uploads).
  DURATION_UNREADABLE,
  DURATION_EXCEEDED
)
export type InvalidRequestCode = typeof InvalidRequestCode.Type

/** A request the model's table refuses; `code` is the spec's code for the rule broken. */
export class InvalidRequest extends Schema.TaggedError<InvalidRequest>()("InvalidRequest", {
  ...failure(400),
  code: InvalidRequestCode,
  message: Schema.String
}) {}

export const UnsupportedModelCode = Schema.Literal("unsupported_video_model", "unsupported_image_model")
export type UnsupportedModelCode = typeof UnsupportedModelCode.Type

/** The model is not open, not supported, or not of the task's kind. */
export class UnsupportedModel extends Schema.TaggedError<UnsupportedModel>()("UnsupportedModel", {
  ...failure(400),
  code: UnsupportedModelCode,
  message: Schema.String
}) {}

export type ValidationError = InvalidRequest | UnsupportedModel
