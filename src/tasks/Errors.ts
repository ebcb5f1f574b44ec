import { Schema } from "effect"
import { failure } from "../platform/Failure.ts"
import { ImageKind } from "./ImageKind.ts"
import type { TaskKind } from "./Task.ts"

/** Errors of creating and reading tasks and their assets. */

/** An unknown task, or another account's (spec: 404 `task_not_found`). */
export class TaskNotFound extends Schema.TaggedError<TaskNotFound>()("TaskNotFound", {
  ...failure(404, "task_not_found"),
  message: Schema.String
}) {
  static of(kind: TaskKind, id: string) {
    return new TaskNotFound({ message: `No ${kind} task with id "${id}" under this account.` })
  }
}

/** An unknown asset, another account's, or a deleted one. */
export class AssetNotFound extends Schema.TaggedError<AssetNotFound>()("AssetNotFound", {
  ...failure(404, "asset_not_found"),
  message: Schema.String
}) {}

/** The same Idempotency-Key with different content (spec: 409). */
export class IdempotencyConflict extends Schema.TaggedError<IdempotencyConflict>()("IdempotencyConflict", {
  ...failure(409, "idempotency_key_conflict"),
  message: Schema.String.pipe(
    Schema.propertySignature,
    Schema.withConstructorDefault(() =>
      "This Idempotency-Key was already used with a different request; use a new key."
    )
  )
}) {}

/** A creation or query request the task layer refuses before any validation by the model's table. */
export class InvalidTaskRequest extends Schema.TaggedError<InvalidTaskRequest>()("InvalidTaskRequest", {
  ...failure(400),
  code: Schema.Literal("invalid_request", "invalid_image_parameter"),
  message: Schema.String
}) {}

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
