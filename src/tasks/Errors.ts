import { Schema } from "effect"
import { failure } from "../platform/Failure.ts"
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

/** A cancel that cannot be done (docs/api.md, Cancelling a task): the message says why; the task goes on. */
export class TaskNotCancellable extends Schema.TaggedError<TaskNotCancellable>()("TaskNotCancellable", {
  ...failure(409, "task_not_cancellable"),
  message: Schema.String
}) {}
