import { Schema } from "effect"
import { failure } from "../platform/Failure.ts"

/** The `after` cursor of the event history names no event of the account. */
export class UnknownEventCursor extends Schema.TaggedError<UnknownEventCursor>()("UnknownEventCursor", {
  ...failure(400, "invalid_request"),
  message: Schema.String
}) {}
