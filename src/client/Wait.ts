import { Duration, Effect, Either } from "effect"
import type { TaskKind } from "../tasks/Task.ts"
import { type ClientError, TaskFailed, WaitTimeout } from "./Errors.ts"
import { getTask, type TaskOf } from "./Tasks.ts"

export interface WaitOptions<T> {
  /** Called with every state read, the first included. */
  readonly onProgress?: ((task: T) => void) | undefined
  /** Give up after this long with `WaitTimeout`; the task itself goes on. */
  readonly timeout?: Duration.DurationInput | undefined
  /**
   * `Retry-After` of the create answer, in seconds: the first look waits
   * this long, and later looks too unless an answer suggests another
   * interval. Without it the first look is at once.
   */
  readonly retryAfter?: number | undefined
  /** Seconds between looks when the gateway suggests none. Default 5 (the gateway's default). */
  readonly interval?: number | undefined
}

const DEFAULT_INTERVAL_S = 5
/** Consecutive network failures, 429s and 5xx answers a wait rides out before it gives up. */
const MAX_TRANSIENT = 5

const isTransient = (error: ClientError) => error._tag === "NetworkError" || error.status === 429 || error.status >= 500

/**
 * Polls a task until it succeeds (returns it) or fails (`TaskFailed` with the
 * task's error). The interval is the gateway's `Retry-After`; a 429 or a
 * passing outage waits as long as that answer says. Interrupting the effect
 * (an `AbortSignal` through the Promise facade) stops the wait at once.
 */
export const waitForTask = <K extends TaskKind>(kind: K, id: string, options: WaitOptions<TaskOf<K>> = {}) => {
  const fallback = options.retryAfter ?? options.interval ?? DEFAULT_INTERVAL_S
  let last: TaskOf<K> | undefined
  const poll = Effect.gen(function*() {
    let delay = options.retryAfter
    let transient = 0
    while (true) {
      if (delay !== undefined) yield* Effect.sleep(Duration.seconds(delay))
      const answer = yield* Effect.either(getTask(kind, id))
      if (Either.isLeft(answer)) {
        const error = answer.left
        if (!isTransient(error) || ++transient > MAX_TRANSIENT) return yield* Effect.fail(error)
        delay = (error._tag === "GatewayError" ? error.retry_after : undefined) ?? fallback
        continue
      }
      transient = 0
      const task = answer.right.task
      last = task
      options.onProgress?.(task)
      if (task.status === "succeeded") return task
      if (task.status === "failed") {
        const error = task.error ?? { code: "task_failed", message: "The task failed.", retryable: false }
        return yield* Effect.fail(new TaskFailed({ task_id: task.id, kind, ...error }))
      }
      delay = answer.right.retryAfter ?? fallback
    }
  })
  if (options.timeout === undefined) return poll
  const seconds = Duration.toSeconds(Duration.decode(options.timeout))
  return poll.pipe(Effect.timeoutFail({
    duration: options.timeout,
    onTimeout: () =>
      new WaitTimeout({
        task_id: id,
        status: last?.status ?? "queued",
        progress: last?.progress ?? 0,
        seconds,
        message: `Task ${id} is still ${last?.status ?? "queued"} (${last?.progress ?? 0}%) after ${seconds} s.`
      })
  }))
}
