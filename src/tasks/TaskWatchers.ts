import { SqlClient } from "@effect/sql"
import { Chunk, Clock, Context, Effect, Layer, Queue } from "effect"
import { Metrics } from "../platform/metrics/Metrics.ts"
import { findWatched, type WatchedRow } from "./sql/findWatched.ts"
import type { ImageTask, TaskKind, VideoTask } from "./Task.ts"
import { listenTaskChanges } from "./TaskChanges.ts"
import { toTaskObject } from "./TaskRow.ts"

/** A state of a task as its watcher read it: `seq` grows with every change of status or progress. */
export interface Observed {
  readonly seq: number
  readonly task: VideoTask | ImageTask
}

/** One read of a watched task: whose it is (each follower checks), and its state. */
export interface WatchedState {
  readonly accountId: string
  readonly kind: TaskKind
  readonly observed: Observed
}

/**
 * However quiet the notifications, a watched task is re-read at least this
 * often: the notification is a hint (a listener reconnecting loses some).
 */
export const REREAD_S = 5

export const isSettled = (task: VideoTask | ImageTask) => task.status === "succeeded" || task.status === "failed"

/** Why a task was read: someone began following it, its notification came, or its periodic re-read fell due. */
export type ReadReason = "opened" | "changed" | "periodic"

/** The watchers' figures since the process started (tests and /metrics read them). */
export interface WatchStats {
  /** Tasks watched now: one watcher each, however many follow it. */
  readonly watchers: number
  /** Followers now: streams, long polls and image requests, all tasks together. */
  readonly followers: number
  /** Task rows read, by reason. */
  readonly reads: Readonly<Record<ReadReason, number>>
  /** Periodic passes that re-read anything (each reads a watched task at most once). */
  readonly periodicPasses: number
}

/** How often the reader looks for due periodic re-reads; a task is re-read once its last read is this much short of REREAD_S. */
const TICK_MS = 1000
/** Ids per statement. */
const BATCH = 500

/** A follower's callback, called with each state read after it began following (undefined: no such task). */
type Listener = (state: WatchedState | undefined) => void

interface Follower {
  readonly listener: Listener
  /** The reads started before this follower came: their answers may be older than its own look at the task. */
  readonly since: number
}

/** The one watcher of a task id in this process. */
interface Watcher {
  readonly followers: Set<Follower>
  /** When the last read of the task started (ms). */
  readAt: number
}

/**
 * The process's watchers of tasks: however many streams, long polls and
 * synchronous image requests follow a task, one watcher per task id reads
 * its row, and each read is fanned out to every follower. The first follower
 * makes the watcher, the last one leaving removes it. One fiber reads for
 * all watchers, in as few statements as it can: the tasks whose
 * notification came (TaskChanges), the ones a follower just began to follow
 * (its first state), and every task whose last read is REREAD_S - 1 s old
 * (looked for every second, so each is re-read at least every REREAD_S).
 * What came while a read was under way is read by the next one, so a burst
 * of changes or of followers costs one read per task, not one per event or
 * follower. A follower gets only reads that started after it came, so its
 * first state is never older than its own look at the task. Rows are read by
 * id whatever account holds them: each follower checks the account
 * (TaskWait). No database connection is held between reads, and a read that
 * fails is tried again at the next tick.
 */
export class TaskWatchers extends Context.Tag("TaskWatchers")<TaskWatchers, {
  /**
   * Follows task `id` until what this returns is called (once); `listener` is called from the reader
   * (synchronously: keep it short). No scope, so that a follower costs no more than its listener.
   */
  readonly follow: (taskId: string, listener: Listener) => Effect.Effect<() => void>
  readonly stats: () => WatchStats
}>() {
  static readonly layer = Layer.scoped(
    TaskWatchers,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const metrics = yield* Metrics
      const byTask = new Map<string, Watcher>()
      // Ids to read at the next pass, with why (the first reason given wins: it is only counted).
      const due = new Map<string, ReadReason>()
      const wake = yield* Queue.sliding<void>(1)
      const reads: Record<ReadReason, number> = { opened: 0, changed: 0, periodic: 0 }
      let followers = 0
      let periodicPasses = 0
      // Reads started so far; a follower records it when it comes (Follower.since).
      let started = 0

      const mark = (taskId: string, reason: ReadReason) => {
        if (!due.has(taskId)) due.set(taskId, reason)
        Queue.unsafeOffer(wake, undefined)
      }
      yield* listenTaskChanges(
        (taskId) => byTask.has(taskId) && mark(taskId, "changed"),
        () => byTask.forEach((_, taskId) => mark(taskId, "changed"))
      )

      // A listener that throws (a defect) is left out of that read only: the task's other followers still get it.
      const fanOut = (taskId: string, row: WatchedRow | undefined, read: number, defects: Array<unknown>) => {
        const watcher = byTask.get(taskId)
        if (watcher === undefined) return
        const state: WatchedState | undefined = row === undefined ? undefined : {
          accountId: row.account_id,
          kind: row.kind,
          observed: { seq: row.change_seq, task: toTaskObject(row) }
        }
        for (const follower of watcher.followers) {
          if (follower.since >= read) continue
          try {
            follower.listener(state)
          } catch (defect) {
            defects.push(defect)
          }
        }
      }

      const readBatch = (ids: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const read = ++started
          const rows = yield* findWatched(sql, ids)
          const found = new Map(rows.map((row) => [row.id, row]))
          const defects: Array<unknown> = []
          for (const id of ids) fanOut(id, found.get(id), read, defects)
          if (defects.length > 0) yield* Effect.logError("a follower of a task failed on its state", defects[0])
        }).pipe(Effect.withSpan("TaskWatchers.read", { attributes: { "tasks.count": ids.length } }))

      const pass = Effect.gen(function*() {
        const now = yield* Clock.currentTimeMillis
        let periodic = 0
        for (const [taskId, watcher] of byTask) {
          if (!due.has(taskId) && now - watcher.readAt >= REREAD_S * 1000 - TICK_MS) {
            due.set(taskId, "periodic")
            periodic++
          }
        }
        if (due.size === 0) return
        if (periodic > 0) periodicPasses++
        const batch = [...due].filter(([taskId]) => byTask.has(taskId))
        due.clear()
        for (const [taskId, reason] of batch) {
          byTask.get(taskId)!.readAt = now
          reads[reason]++
        }
        for (const reason of ["opened", "changed", "periodic"] as const) {
          const n = batch.filter(([, r]) => r === reason).length
          if (n > 0) metrics.taskWatchReads(reason, n)
        }
        const reasons = new Map(batch)
        yield* Effect.forEach(
          Chunk.chunksOf(Chunk.fromIterable(reasons.keys()), BATCH),
          (chunk) =>
            readBatch(Chunk.toReadonlyArray(chunk)).pipe(
              // Read again at the next tick; the followers wait meanwhile.
              Effect.catchAllCause((cause) =>
                Effect.zipRight(
                  Effect.sync(() =>
                    Chunk.forEach(chunk, (taskId) => due.has(taskId) || due.set(taskId, reasons.get(taskId)!))
                  ),
                  Effect.logWarning("watched tasks could not be read; trying again", cause)
                )
              )
            ),
          { discard: true }
        )
      })

      // Waits for a change, a new follower or the next tick (with nothing watched, for a follower only).
      const next = Effect.suspend(() =>
        byTask.size === 0 ? Queue.take(wake) : Effect.asVoid(Effect.timeoutOption(Queue.take(wake), TICK_MS))
      )
      // Whatever fails in a pass, the reader goes on: every follower of the process depends on it.
      const guarded = Effect.catchAllCause(
        pass,
        (cause) => Effect.logError("a pass of the task watchers failed", cause)
      )
      yield* Effect.forkScoped(Effect.forever(Effect.zipRight(next, guarded)))

      metrics.observe({
        gauges: [
          { name: "mtg_task_watchers", help: "Tasks this process watches for streams, long polls and image requests" },
          {
            name: "mtg_task_followers",
            help: "Streams, long polls and image requests following a task in this process"
          }
        ],
        read: async () => [
          { name: "mtg_task_watchers", labels: {}, value: byTask.size },
          { name: "mtg_task_followers", labels: {}, value: followers }
        ]
      })

      const follow = (taskId: string, listener: Listener) =>
        Effect.sync(() => {
          const follower: Follower = { listener, since: started }
          const watcher = byTask.get(taskId) ?? { followers: new Set(), readAt: 0 }
          watcher.followers.add(follower)
          byTask.set(taskId, watcher)
          followers++
          mark(taskId, "opened")
          return () => {
            // The last follower removes the watcher; a follower already gone counts for nothing.
            if (watcher.followers.delete(follower) !== true) return
            followers--
            if (watcher.followers.size === 0 && byTask.get(taskId) === watcher) {
              byTask.delete(taskId)
              due.delete(taskId)
            }
          }
        })

      return {
        follow,
        stats: () => ({ watchers: byTask.size, followers, reads: { ...reads }, periodicPasses })
      }
    })
  )
}
