import { Context, type Effect } from "effect"
import type { TaskNotCancellable, TaskNotFound } from "./Errors.ts"
import type { ImageTask, TaskKind, VideoTask } from "./Task.ts"
import type { TaskFailure } from "./TaskFailure.ts"

/** How a task a caller cancelled ends (docs/api.md, Cancelling a task): never worth retrying as it was. */
export const CANCELLED: TaskFailure = {
  code: "task_cancelled",
  message: "The task was cancelled at the caller's request; its charge is refunded.",
  retryable: false
}

/** How a task still unfinished at its `Cancel-After` deadline ends: a fresh task may well make it. */
export const DEADLINE_EXCEEDED: TaskFailure = {
  code: "task_deadline_exceeded",
  message: "The task did not finish before its Cancel-After deadline and was cancelled; its charge is refunded.",
  retryable: true
}

/** The codes of a task that ended by a cancel, which a second cancel answers again rather than refuses. */
export const CANCEL_CODES: ReadonlySet<string> = new Set([CANCELLED.code, DEADLINE_EXCEEDED.code])

/**
 * Cancelling a caller's task: the port the handlers and the console use,
 * provided by the engine (tasks/engine/Cancellation.ts), which owns the
 * task's state, its upstream and its terminal transitions. The task object
 * as the query endpoint returns it, or why it cannot be cancelled.
 */
export class TaskCancel extends Context.Tag("TaskCancel")<TaskCancel, {
  readonly cancel: (
    accountId: string,
    kind: TaskKind,
    id: string
  ) => Effect.Effect<VideoTask | ImageTask, TaskNotFound | TaskNotCancellable>
}>() {}
