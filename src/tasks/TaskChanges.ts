import { Context, Effect, Layer, Option, Queue, Schedule, type Scope, Stream } from "effect"
import { makeListen } from "../platform/Notifications.ts"

/** The NOTIFY channel the tasks table's trigger signals a task's change of status or progress on; the payload is its id. */
export const TASK_CHANGED_CHANNEL = "task_changed"

/** One watcher's wake-ups: at most one pending, so a watcher that is slow to look never makes anything grow. */
export interface Wake {
  /** Waits for the next change of the task, or `seconds` at most; true when woken by a change. */
  readonly next: (seconds: number) => Effect.Effect<boolean>
}

/**
 * Changes of tasks for whoever watches one in this process (live status
 * streams, long polls, the synchronous image endpoints): one LISTEN per
 * process, fanned out by task id to the watchers registered here. A hint
 * only: every watcher also re-reads its row on its own schedule, so a lost
 * listener delays an answer but never loses it. While the listener
 * reconnects every watcher is woken, to re-read at once.
 */
export class TaskChanges extends Context.Tag("TaskChanges")<TaskChanges, {
  /** Wake-ups for a task until the scope closes; registered before returning, so a read after it misses nothing. */
  readonly watch: (taskId: string) => Effect.Effect<Wake, never, Scope.Scope>
  /** Watchers registered now (what tests check is left behind after clients go). */
  readonly watchers: () => number
}>() {
  static readonly layer = Layer.scoped(
    TaskChanges,
    Effect.gen(function*() {
      const listen = yield* makeListen
      const byTask = new Map<string, Set<Queue.Queue<void>>>()
      let count = 0
      const wake = (queues: Iterable<Queue.Queue<void>>) => Effect.forEach(queues, (q) => Queue.offer(q, undefined))
      const wakeAll = Effect.forEach(byTask.values(), wake, { discard: true })
      yield* listen(TASK_CHANGED_CHANNEL).pipe(
        Stream.onStart(wakeAll),
        Stream.runForEach((taskId) =>
          Option.match(Option.fromNullable(byTask.get(taskId)), {
            onNone: () => Effect.void,
            onSome: (queues) => Effect.asVoid(wake(queues))
          })
        ),
        Effect.retry(Schedule.spaced("1 second")),
        Effect.ignore,
        Effect.forkScoped
      )
      const watch = (taskId: string) =>
        Effect.acquireRelease(
          Effect.map(Queue.sliding<void>(1), (queue) => {
            const queues = byTask.get(taskId) ?? new Set()
            queues.add(queue)
            byTask.set(taskId, queues)
            count++
            return queue
          }),
          (queue) =>
            Effect.flatMap(Queue.shutdown(queue), () =>
              Effect.sync(() => {
                const queues = byTask.get(taskId)
                queues?.delete(queue)
                if (queues?.size === 0) byTask.delete(taskId)
                count--
              }))
        ).pipe(Effect.map((queue): Wake => ({
          next: (seconds) =>
            Queue.take(queue).pipe(
              Effect.timeoutOption(`${seconds} seconds`),
              Effect.map(Option.isSome)
            )
        })))
      return { watch, watchers: () => count }
    })
  )
}
