import { Schema } from "effect"
import { failure } from "../platform/Failure.ts"

/** An upstream callback its channel's adapter refused (a bad or stale signature, not its payload): nothing is polled. */
export class InvalidCallback extends Schema.TaggedError<InvalidCallback>()("InvalidCallback", {
  ...failure(400, "invalid_callback"),
  message: Schema.String.pipe(
    Schema.propertySignature,
    Schema.withConstructorDefault(() => "The callback could not be verified or read.")
  )
}) {}

/** An upstream callback not taken in time (the database is slow): the upstream may send it again. */
export class CallbackNotTaken extends Schema.TaggedError<CallbackNotTaken>()("CallbackNotTaken", {
  ...failure(503, "service_unavailable"),
  message: Schema.String.pipe(
    Schema.propertySignature,
    Schema.withConstructorDefault(() => "The callback could not be taken in time; send it again.")
  )
}) {}
