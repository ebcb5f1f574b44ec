import { Schema } from "effect"
import { ErrorType } from "../platform/Failure.ts"
import { TaskKind, TaskStatus } from "../tasks/Task.ts"

/**
 * What the typed client fails with. Every HTTP error of the gateway carries
 * the spec's error body; `GatewayError` keeps all of it plus the status (and
 * `Retry-After` of a 429 or 503), so a caller can branch on `code`.
 */
export class GatewayError extends Schema.TaggedError<GatewayError>()("GatewayError", {
  status: Schema.Number,
  type: Schema.Union(ErrorType, Schema.String),
  code: Schema.String,
  message: Schema.String,
  request_id: Schema.NullOr(Schema.String),
  /** Seconds, from `Retry-After`, when the answer had one. */
  retry_after: Schema.optional(Schema.Number)
}) {
  override toString() {
    return `${this.code}: ${this.message}`
  }
}

/** The gateway could not be reached, or the connection broke before an answer. */
export class NetworkError extends Schema.TaggedError<NetworkError>()("NetworkError", {
  url: Schema.String,
  message: Schema.String
}) {}

/** A task ended `failed`: its error object (spec: Task error object). */
export class TaskFailed extends Schema.TaggedError<TaskFailed>()("TaskFailed", {
  task_id: Schema.String,
  kind: TaskKind,
  code: Schema.String,
  message: Schema.String,
  retryable: Schema.Boolean
}) {}

/** A wait ran past its time limit; the task itself goes on. */
export class WaitTimeout extends Schema.TaggedError<WaitTimeout>()("WaitTimeout", {
  task_id: Schema.String,
  status: TaskStatus,
  progress: Schema.Number,
  seconds: Schema.Number,
  message: Schema.String
}) {}

/** A local file the caller named cannot be used (missing, unreadable, of no type the gateway takes). */
export class LocalFileError extends Schema.TaggedError<LocalFileError>()("LocalFileError", {
  path: Schema.String,
  message: Schema.String
}) {}

export type ClientError = GatewayError | NetworkError
