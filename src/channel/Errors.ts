import { Schema } from "effect"
import { failure } from "../platform/Failure.ts"

/** Errors of the channels: taking new work, and the operator's channel routes. */

/**
 * None of the model's channels takes new work (each is draining or disabled
 * by an operator): nothing was created or charged, and the same request may
 * succeed once one is enabled again (`Retry-After`).
 */
export class ModelUnavailable extends Schema.TaggedError<ModelUnavailable>()("ModelUnavailable", {
  ...failure(503, "model_unavailable"),
  message: Schema.String,
  retryAfter: Schema.Number
}) {}

/** A channel name the configuration does not have (admin routes). */
export class ChannelNotFound extends Schema.TaggedError<ChannelNotFound>()("ChannelNotFound", {
  ...failure(404, "channel_not_found"),
  message: Schema.String
}) {}
