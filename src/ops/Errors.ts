import { Schema } from "effect"
import { failure } from "../platform/Failure.ts"

/** The database is unreachable or its migrations are not applied: no traffic yet. */
export class NotReady extends Schema.TaggedError<NotReady>()("NotReady", {
  ...failure(503, "not_ready"),
  message: Schema.String
}) {}
