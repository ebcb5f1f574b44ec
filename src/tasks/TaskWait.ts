import { Context, Effect, Layer } from "effect"
import type { ImageTask, TaskKind, VideoTask } from "./Task.ts"
import { isSettled, type Observed, TaskWatchers } from "./TaskWatchers.ts"

/**
 * Waiting on a caller's task: the live status stream, the long poll and the
 * synchronous image endpoints share it, over the process's one watcher per
 * task (TaskWatchers). Each follower sees a task only when it is the
 * caller's: the watcher reads the row whoever holds it, and a row of another
 * account (or kind) counts as no task here, so sharing a watcher never shares
 * a task. Generation runs in the engine's workers, never here: a client that
 * disconnects ends only its following (it goes with its scope), and the task
 * runs on.
 */
const make = Effect.gen(function*() {
  const watchers = yield* TaskWatchers

  /**
   * Follows the caller's task until what this returns is called: `onState`
   * with each state read after this call, the first of them as soon as it is
   * read (states that did not change are passed again: the caller compares
   * `seq`), or with undefined when the task is unknown or another account's.
   * Called synchronously by the watcher's reader: keep it short.
   */
  const follow = (
    accountId: string,
    kind: TaskKind,
    id: string,
    onState: (observed: Observed | undefined) => void
  ): Effect.Effect<() => void> =>
    watchers.follow(
      id,
      (state) =>
        onState(
          state === undefined || state.accountId !== accountId || state.kind !== kind ? undefined : state.observed
        )
    )

  /**
   * Waits up to `seconds` for the caller's task to reach a terminal state and
   * returns the last state seen (`task` itself when it is settled already or
   * nothing newer was seen).
   */
  const awaitSettled = <T extends VideoTask | ImageTask>(accountId: string, kind: TaskKind, task: T, seconds: number) =>
    (isSettled(task) ? Effect.succeed(task) : Effect.scoped(Effect.gen(function*() {
      let last = task
      let done = false
      let resume: ((effect: Effect.Effect<void>) => void) | undefined
      const onState = (seen: Observed | undefined) => {
        if (seen !== undefined) last = seen.task as T
        if (seen === undefined || isSettled(seen.task)) {
          done = true
          const waiting = resume
          resume = undefined
          waiting?.(Effect.void)
        }
      }
      yield* Effect.acquireRelease(follow(accountId, kind, task.id, onState), (stop) => Effect.sync(stop))
      yield* Effect.async<void>((callback) => {
        if (done) callback(Effect.void)
        else resume = callback
      }).pipe(Effect.timeoutOption(`${seconds} seconds`))
      return last
    }))).pipe(Effect.withSpan("task.await", { attributes: { "task.id": task.id, "wait.limit_s": seconds } }))

  return { follow, awaitSettled } as const
})

export class TaskWait extends Context.Tag("TaskWait")<TaskWait, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(TaskWait, make).pipe(Layer.provideMerge(TaskWatchers.layer))
}
