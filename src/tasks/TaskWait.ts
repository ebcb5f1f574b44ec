import { Duration, Effect, Option, Schedule } from "effect"
import type { ImageTask } from "./Task.ts"
import { TaskStore } from "./TaskStore.ts"

/**
 * Quick looks first (a small image takes about a second), then one every half
 * second: a bounded load per waiting request, and no database connection is
 * held between looks.
 */
const LOOKS = Schedule.exponential("100 millis", 1.5).pipe(Schedule.union(Schedule.spaced("500 millis")))

export const isSettled = (task: ImageTask) => task.status === "succeeded" || task.status === "failed"

/**
 * Waits up to `seconds` for the caller's task to reach a terminal state by
 * reading its row, and returns the last state read. Generation runs in the
 * engine's workers, never here: a client that disconnects interrupts only
 * this wait, and the task runs on.
 */
export const awaitSettled = (accountId: string, task: ImageTask, seconds: number) =>
  Effect.gen(function*() {
    if (isSettled(task)) return task
    const store = yield* TaskStore
    let last = task
    const look = Effect.map(store.find(accountId, "image", task.id), (found) => {
      if (Option.isSome(found)) last = found.value as ImageTask
      return last
    })
    yield* Effect.sleep("100 millis").pipe(
      Effect.zipRight(Effect.repeat(look, { schedule: LOOKS, until: isSettled })),
      Effect.timeoutOption(Duration.seconds(seconds))
    )
    return last
  }).pipe(Effect.withSpan("task.await", { attributes: { "task.id": task.id, "wait.limit_s": seconds } }))
