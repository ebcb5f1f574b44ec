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
}) {
  /** `detail` narrows the message (" for this request"); the caller may try again in 30 s: an operator's change is seconds away. */
  static of(model: string, detail = "") {
    return new ModelUnavailable({
      message: `The model "${model}" is temporarily unavailable${detail}. Try again later.`,
      retryAfter: 30
    })
  }
}

/** A channel name the configuration does not have (admin routes). */
export class ChannelNotFound extends Schema.TaggedError<ChannelNotFound>()("ChannelNotFound", {
  ...failure(404, "channel_not_found"),
  message: Schema.String
}) {}
