import { Schema } from "effect"
import { failure } from "../platform/Failure.ts"

/** A webhook key rotation or test event asked of an account with no webhook URL. */
export class WebhookNotConfigured extends Schema.TaggedError<WebhookNotConfigured>()("WebhookNotConfigured", {
  ...failure(400, "webhook_not_configured"),
  message: Schema.String
}) {}

/** The `after` cursor of the event history names no event of the account. */
export class UnknownEventCursor extends Schema.TaggedError<UnknownEventCursor>()("UnknownEventCursor", {
  ...failure(400, "invalid_request"),
  message: Schema.String
}) {}

/** A replay whose window is not one (`to` not after `from`). */
export class InvalidReplay extends Schema.TaggedError<InvalidReplay>()("InvalidReplay", {
  ...failure(400, "invalid_request"),
  message: Schema.String
}) {}
