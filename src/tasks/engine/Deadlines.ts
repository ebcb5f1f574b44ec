import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { DEADLINE_EXCEEDED } from "../TaskCancel.ts"
import { Cancellation } from "./Cancellation.ts"
import { readTaskState } from "./sql/readTaskState.ts"
import { TaskQueue } from "./TaskQueue.ts"

/** How many due deadlines one sweep ends; the rest wait for the next sweep. */
const SWEEP_LIMIT = 100

/**
 * One look for tasks past their `Cancel-After` deadline: each is ended as a
 * cancel would end it, with `task_deadline_exceeded` and its refund. The
 * deadline is a column and the sweep runs with every reaper, so a replica
 * that crashes loses none. Where the upstream cannot cancel (or refuses), the
 * deadline is dropped and the task runs on to its normal end (best effort);
 * where it may work later (a submit in flight, an upstream that did not
 * answer), the next sweep tries again. Several sweeps at once do no harm:
 * the ending is guarded (Cancellation.ts).
 */
export const deadlinesOnce = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const queue = yield* TaskQueue
  const cancellation = yield* Cancellation
  for (const id of yield* queue.deadlinesDue(SWEEP_LIMIT)) {
    const settled = yield* cancellation.settle(readTaskState(sql, id), DEADLINE_EXCEEDED)
    if (settled._tag === "None") continue
    const step = settled.value
    if (step._tag === "Ended") {
      yield* Effect.logInfo("a task passed its deadline and was cancelled").pipe(Effect.annotateLogs({ task_id: id }))
    } else if (step._tag === "Refused" && step.final) {
      yield* Effect.logInfo("a task passed its deadline but cannot be cancelled; it runs on").pipe(
        Effect.annotateLogs({ task_id: id, reason: step.reason })
      )
      yield* queue.forgetDeadline(id)
    }
  }
})
