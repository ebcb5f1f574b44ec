import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option, Ref, Stream } from "effect"
import { findObserved } from "./sql/findObserved.ts"
import type { ImageTask, TaskKind, VideoTask } from "./Task.ts"
import { TaskChanges } from "./TaskChanges.ts"
import { toTaskObject } from "./TaskRow.ts"

/** A state of a task as a watcher saw it: `seq` grows with every change of status or progress. */
export interface Observed {
  readonly seq: number
  readonly task: VideoTask | ImageTask
}

/**
 * However quiet the notifications, a watcher re-reads its task at least this
 * often: the notification is a hint (a listener reconnecting loses some).
 */
export const REREAD_S = 5

export const isSettled = (task: VideoTask | ImageTask) => task.status === "succeeded" || task.status === "failed"

/**
 * Waiting on tasks: the live status stream, the long poll and the synchronous
 * image endpoints share it. A watcher registers for its task's notifications
 * (TaskChanges) before it reads the row, then reads again on each wake-up or
 * after REREAD_S, whichever comes first. Generation runs in the engine's
 * workers, never here: a client that disconnects ends only its watch (its
 * registration goes with its scope), and the task runs on. No database
 * connection is held between reads.
 */
const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const changes = yield* TaskChanges

  const read = (accountId: string, kind: TaskKind, id: string) =>
    findObserved(sql, accountId, kind, id).pipe(
      Effect.map((rows) =>
        Option.map(Option.fromNullable(rows[0]), (row): Observed => ({ seq: row.change_seq, task: toTaskObject(row) }))
      ),
      Effect.orDie,
      Effect.withSpan("TaskWait.read", { attributes: { "task.id": id }, captureStackTrace: false })
    )

  /**
   * The caller's task: its current state, then each state with a new `seq`
   * (several changes between two reads come as the last of them), ending
   * after a terminal state. With `after` equal to the current `seq` (a client
   * resuming) the current state is not sent again; any other `after` counts
   * as none. Empty for an unknown or another account's task.
   */
  const observe = (accountId: string, kind: TaskKind, id: string, after?: number): Stream.Stream<Observed> =>
    Stream.unwrapScoped(Effect.gen(function*() {
      const wake = yield* changes.watch(id)
      const first = yield* read(accountId, kind, id)
      if (Option.isNone(first)) return Stream.empty
      const nextChange = (previous: Observed): Effect.Effect<Option.Option<Observed>> =>
        Effect.flatMap(
          wake.next(REREAD_S),
          () =>
            Effect.flatMap(read(accountId, kind, id), (now) =>
              Option.isNone(now) || now.value.seq !== previous.seq
                ? Effect.succeed(now)
                : nextChange(previous))
        )
      const rest = Stream.unfoldEffect(first.value, (previous) =>
        isSettled(previous.task)
          ? Effect.succeedNone
          : Effect.map(nextChange(previous), Option.map((now) => [now, now] as const)))
      return after === first.value.seq ? rest : Stream.concat(Stream.make(first.value), rest)
    }))

  /**
   * Waits up to `seconds` for the caller's task to reach a terminal state and
   * returns the last state seen (`task` itself when it is settled already or
   * nothing newer was seen).
   */
  const awaitSettled = <T extends VideoTask | ImageTask>(accountId: string, kind: TaskKind, task: T, seconds: number) =>
    Effect.gen(function*() {
      if (isSettled(task)) return task
      const last = yield* Ref.make<T>(task)
      yield* observe(accountId, kind, task.id).pipe(
        Stream.runForEachWhile((seen) => Effect.as(Ref.set(last, seen.task as T), !isSettled(seen.task))),
        Effect.timeoutOption(`${seconds} seconds`)
      )
      return yield* Ref.get(last)
    }).pipe(Effect.withSpan("task.await", { attributes: { "task.id": task.id, "wait.limit_s": seconds } }))

  return { observe, awaitSettled } as const
})

export class TaskWait extends Context.Tag("TaskWait")<TaskWait, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(TaskWait, make).pipe(Layer.provideMerge(TaskChanges.layer))
}
