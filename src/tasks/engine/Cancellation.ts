import { SqlClient } from "@effect/sql"
import { Context, Data, Effect, Layer, Option, Schema } from "effect"
import { Registry } from "../../catalog/Registry.ts"
import { Channels } from "../../channel/Channels.ts"
import { type AsyncRunner, isAsyncRunner, isCancelled } from "../../channel/contract/Upstream.ts"
import { TaskNotCancellable, TaskNotFound } from "../Errors.ts"
import type { ImageTask, TaskKind, VideoTask } from "../Task.ts"
import { CANCEL_CODES, CANCELLED, TaskCancel } from "../TaskCancel.ts"
import type { TaskFailure } from "../TaskFailure.ts"
import { TaskStore } from "../TaskStore.ts"
import { costOf } from "./AttemptCost.ts"
import { pricingFor } from "./Plans.ts"
import { readOwnTaskState, TaskState } from "./sql/readTaskState.ts"
import { TaskOutcomes } from "./TaskOutcomes.ts"
import { TaskQueue } from "./TaskQueue.ts"

/**
 * What one look at a task decided. `Refused` is final when waiting cannot
 * change it (the upstream refused or cannot cancel, the result is being
 * stored); otherwise a later look may succeed (the task is being handed to
 * its upstream right now, or the upstream did not answer).
 */
export type CancelStep = Data.TaggedEnum<{
  Ended: { readonly task: VideoTask | ImageTask }
  Terminal: { readonly state: TaskState }
  Refused: { readonly reason: string; readonly final: boolean }
  /** The task moved on between the read and the write: look again. */
  Moved: {}
}>
const CancelStep = Data.taggedEnum<CancelStep>()
/** Where a cancel stopped looking: anything but Moved. */
export type SettledStep = Exclude<CancelStep, { readonly _tag: "Moved" }>

/** How often a cancel looks again at a task that moved while it decided (each look is one guarded write). */
const MAX_LOOKS = 5

const decodeState = Schema.decodeUnknown(Schema.Array(TaskState))

/**
 * Cancelling a task (docs/engine.md, Cancel and deadlines): where no upstream
 * holds it, it ends at once; where one does, the upstream is asked first
 * through its adapter's optional `cancel`. The ending itself is one guarded
 * transaction (TaskOutcomes.cancel), so a cancel racing a claim or a
 * completion leaves exactly one terminal state and at most one refund.
 */
const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const channels = yield* Channels
  const outcomes = yield* TaskOutcomes
  const queue = yield* TaskQueue
  const store = yield* TaskStore
  const registry = yield* Registry

  /** The channel's runner for the kind, if the channel is still configured. */
  const runnerOf = (channel: string, kind: TaskKind) =>
    channels.get(channel) === undefined
      ? Effect.succeed(Option.none<unknown>())
      : channels.runner(channel).pipe(
        Effect.map((runner) => Option.fromNullable((runner as Partial<Record<TaskKind, unknown>>)[kind])),
        Effect.orElseSucceed(() => Option.none<unknown>())
      )

  const end = (
    state: TaskState,
    runStates: ReadonlyArray<"available" | "running" | "waiting" | "polling">,
    failure: TaskFailure
  ) =>
    outcomes.cancel(
      { id: state.id, attempt: state.attempt, runStates, accountId: state.account_id, kind: state.kind },
      failure
    ).pipe(
      Effect.map(Option.match({ onNone: () => CancelStep.Moved(), onSome: (task) => CancelStep.Ended({ task }) }))
    )

  /** Asks the task's upstream to cancel it, then ends it if the upstream confirmed. */
  const cancelUpstream = (state: TaskState, failure: TaskFailure) =>
    Effect.gen(function*() {
      const runner = yield* runnerOf(state.channel, state.kind)
      const upstream = Option.getOrUndefined(runner)
      if (upstream === undefined || !isAsyncRunner(upstream) || state.upstream_id === null) {
        return CancelStep.Refused({ reason: "its upstream cannot be reached to cancel it.", final: false })
      }
      const cancel = (upstream as AsyncRunner<unknown>).cancel
      if (cancel === undefined) {
        return CancelStep.Refused({
          reason: "it is running at a provider that cannot cancel a task it has started; it goes on to its end.",
          final: true
        })
      }
      const outcome = yield* Effect.either(cancel(state.upstream_id))
      if (outcome._tag === "Left") {
        yield* Effect.logWarning("an upstream cancel failed").pipe(
          Effect.annotateLogs({ task_id: state.id, channel: state.channel, reason: outcome.left.message })
        )
        return CancelStep.Refused({ reason: "its provider did not answer the cancel; try again.", final: false })
      }
      const answer = outcome.right
      if (!isCancelled(answer)) {
        return CancelStep.Refused({
          reason: "its provider has already started it and refused to cancel it; it goes on to its end.",
          final: true
        })
      }
      const ended = yield* end(state, ["waiting", "polling"], failure)
      // The operator's record says why the attempt ended, only when it was the cancel that ended it;
      // with what the provider charges for a cancelled task (a bare `cancelled` it does not bill).
      if (ended._tag === "Ended") {
        const pricing = pricingFor(registry, { ...state, requestVersion: state.request_version })
        const charge = answer === "cancelled" ? { billed: false } : answer
        yield* queue.attempt({
          taskId: state.id,
          attempt: state.attempt,
          channel: state.channel,
          upstreamId: state.upstream_id,
          outcome: "cancelled",
          lastAnswer: { code: failure.code },
          cost: { ...costOf(pricing, charge), model: state.model }
        })
      }
      return ended
    })

  /** One decision on the task as it is now, and at most one guarded write. */
  const step = (state: TaskState, failure: TaskFailure): Effect.Effect<CancelStep> =>
    Effect.gen(function*() {
      switch (state.run_state) {
        case "done":
          return CancelStep.Terminal({ state })
        case "available":
          return yield* end(state, ["available"], failure)
        case "running": {
          const runner = yield* runnerOf(state.channel, state.kind)
          // A task being submitted may already be upstream: ending it here could leave it running there unseen.
          if (Option.isNone(runner) || isAsyncRunner(runner.value)) {
            return CancelStep.Refused({
              reason: "it is being handed to its provider right now; try again in a few seconds.",
              final: false
            })
          }
          const ended = yield* end(state, ["running"], failure)
          // The worker running it stops at once (ChannelWorker.ts); its later writes are refused by the guard anyway.
          if (ended._tag === "Ended") yield* queue.announceCancelled(state.id)
          return ended
        }
        case "waiting":
        case "polling":
          return yield* cancelUpstream(state, failure)
        case "storing":
          return CancelStep.Refused({ reason: "its result is already made and being stored.", final: true })
      }
    })

  /** Decides and writes until the task holds still for one look (a claim or completion may race the first). */
  const settle = (read: Effect.Effect<ReadonlyArray<unknown>, unknown>, failure: TaskFailure) =>
    Effect.gen(function*() {
      for (let look = 0; look < MAX_LOOKS; look++) {
        const [state] = yield* Effect.flatMap(read, decodeState).pipe(Effect.orDie)
        if (state === undefined) return Option.none<SettledStep>()
        const result = yield* step(state, failure)
        if (result._tag !== "Moved") return Option.some<SettledStep>(result)
      }
      return Option.some<SettledStep>(
        CancelStep.Refused({ reason: "it is changing state right now; try again.", final: false })
      )
    })

  /** A caller's cancel: the task object, or 404 / 409 as the contract says. */
  const cancel = (accountId: string, kind: TaskKind, id: string) =>
    Effect.gen(function*() {
      const settled = yield* settle(readOwnTaskState(sql, accountId, kind, id), CANCELLED)
      if (Option.isNone(settled)) return yield* TaskNotFound.of(kind, id)
      const result = settled.value
      switch (result._tag) {
        case "Ended":
          return result.task
        case "Terminal": {
          const { state } = result
          // Cancelling a cancelled task (or one its deadline ended) answers it again.
          if (state.status === "failed" && state.error_code !== null && CANCEL_CODES.has(state.error_code)) {
            const task = yield* store.find(accountId, kind, id)
            if (Option.isSome(task)) return task.value
          }
          return yield* new TaskNotCancellable({
            message: `The task cannot be cancelled: it has already ${
              state.status === "succeeded" ? "succeeded" : "failed"
            }.`
          })
        }
        case "Refused":
          return yield* new TaskNotCancellable({ message: `The task cannot be cancelled: ${result.reason}` })
      }
    }).pipe(Effect.withSpan("TaskCancel.cancel", { attributes: { "task.id": id, "task.kind": kind } }))

  return { cancel, settle } as const
})

export class Cancellation extends Context.Tag("Cancellation")<Cancellation, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Cancellation, make)
}

/** The port the handlers and the console cancel through (tasks/TaskCancel.ts), on this engine's cancellation. */
export const TaskCancelLive = Layer.effect(TaskCancel, Effect.map(Cancellation, ({ cancel }) => ({ cancel })))
