import { Schema } from "effect"
import { failure } from "../platform/Failure.ts"

/** A usage report or losses query that cannot be answered as asked (its window, grouping or cursor). */
export class InvalidUsageQuery extends Schema.TaggedError<InvalidUsageQuery>()("InvalidUsageQuery", {
  ...failure(400, "invalid_request"),
  message: Schema.String
}) {}
