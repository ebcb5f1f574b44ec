import { SqlClient } from "@effect/sql"
import { Clock, Context, Data, Effect, Layer, Option } from "effect"
import { Billing } from "../../billing/Billing.ts"
import { retryingConflicts } from "../../platform/Database.ts"
import { Metrics } from "../../platform/metrics/Metrics.ts"
import { nowSeconds } from "../../platform/Time.ts"
import { Outbox } from "../../webhooks/Outbox.ts"
import { eventTypeOf } from "../Kinds.ts"
import type { ImageTask, TaskKind, VideoTask } from "../Task.ts"
import type { TaskFailure } from "../TaskFailure.ts"
import { toTaskObject } from "../TaskRow.ts"
import type { Claim } from "./Claim.ts"
import { type CancelGuard, cancelTask } from "./sql/cancelTask.ts"
import { chargeOf } from "./sql/chargeOf.ts"
import { completeTask } from "./sql/completeTask.ts"
import { failTask } from "./sql/failTask.ts"
import { insertAsset, type NewAsset } from "./sql/insertAsset.ts"

/** The task left the state a cancel was decided on before the cancel's write: nothing is written. */
class MovedOn extends Data.TaggedError("MovedOn") {}

/** The claim was taken back (lease expired, another attempt runs): this worker's result is void. */
export class StaleClaim extends Data.TaggedError("StaleClaim")<{ readonly taskId: string; readonly attempt: number }> {}

/**
 * Terminal transitions. Each is ONE transaction holding the guarded state
 * change, the refund of a failure and the outbox event, so a crash leaves
 * either all of them or none, and a stale attempt changes nothing: the
 * guard matches no row and the transaction rolls back. The delivery
 * workers are woken after the commit (Outbox.ts says why).
 */
const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const billing = yield* Billing
  const outbox = yield* Outbox
  const metrics = yield* Metrics

  /** Counted once the terminal transaction has committed (a stale claim or a rollback counts nothing). */
  const counted = (claim: Claim, status: "succeeded" | "failed", code?: string, refundedMicros = 0) =>
    Effect.map(Clock.currentTimeMillis, (now) =>
      metrics.taskFinished({
        kind: claim.kind,
        model: claim.model,
        channel: claim.channel,
        status,
        code,
        seconds: Math.max(0, now / 1000 - claim.createdAt),
        refundedMicros
      }))

  const succeed = (claim: Claim, assets: ReadonlyArray<NewAsset>, result: unknown) =>
    Effect.gen(function*() {
      const now = yield* nowSeconds
      const [row] = yield* completeTask(sql, claim, result, now)
      if (row === undefined) return yield* new StaleClaim({ taskId: claim.id, attempt: claim.attempt })
      for (const asset of assets) yield* insertAsset(sql, claim, asset, now)
      const task = toTaskObject(row)
      const event = yield* outbox.record(claim.accountId, eventTypeOf(claim.kind, "succeeded"), task, claim.id)
      return { task, event }
    }).pipe(
      sql.withTransaction,
      retryingConflicts,
      Effect.catchTag("SqlError", Effect.die),
      Effect.tap(() => counted(claim, "succeeded")),
      Effect.flatMap(({ event, task }) => Effect.as(outbox.announce(event), task)),
      Effect.withSpan("task.succeed", { attributes: { "task.id": claim.id, "task.attempt": claim.attempt } })
    )

  /**
   * The refund of a task's pre-charge, taken first: the account's row is
   * locked before the task's (the lock order of migration 21). When the
   * guarded write that follows finds the task moved on, the transaction
   * rolls back, this refund with it.
   */
  const refundFirst = (accountId: string, id: string) =>
    Effect.gen(function*() {
      const [charged] = yield* chargeOf(sql, id)
      if (charged === undefined) return
      yield* billing.refund(accountId, id, {
        walletMicros: Number(charged.charged_wallet_micros),
        subscriptionMicros: Number(charged.charged_subscription_micros)
      })
    })

  /** Fails a running claim and refunds its pre-charge; `refunded_at` makes a second refund impossible. */
  const fail = (claim: Claim, failure: TaskFailure) =>
    Effect.gen(function*() {
      const now = yield* nowSeconds
      yield* refundFirst(claim.accountId, claim.id)
      const [row] = yield* failTask(sql, claim, failure, now)
      if (row === undefined) return yield* new StaleClaim({ taskId: claim.id, attempt: claim.attempt })
      const task = toTaskObject(row)
      const event = yield* outbox.record(claim.accountId, eventTypeOf(claim.kind, "failed"), task, claim.id)
      return { task, event, refunded: row.charged_wallet_micros + row.charged_subscription_micros }
    }).pipe(
      sql.withTransaction,
      retryingConflicts,
      Effect.catchTag("SqlError", Effect.die),
      Effect.tap(({ refunded }) => counted(claim, "failed", failure.code, refunded)),
      Effect.flatMap(({ event, task }) => Effect.as(outbox.announce(event), task)),
      Effect.withSpan("task.fail", {
        attributes: { "task.id": claim.id, "task.attempt": claim.attempt, "task.error_code": failure.code }
      })
    )

  /**
   * Ends a task a cancel or its deadline stopped, in the state the decision
   * was made on (cancelTask.ts): the failure, the full refund and the
   * `*.task.failed` event in one transaction. None when the task moved on
   * first (claimed, finished, cancelled): nothing is written then.
   */
  const cancel = (
    target: CancelGuard & { readonly accountId: string; readonly kind: TaskKind },
    failure: TaskFailure
  ) =>
    Effect.gen(function*() {
      const now = yield* nowSeconds
      yield* refundFirst(target.accountId, target.id)
      const [row] = yield* cancelTask(sql, target, failure, now)
      // Rolled back, the refund with it.
      if (row === undefined) return yield* new MovedOn()
      const task = toTaskObject(row)
      const event = yield* outbox.record(target.accountId, eventTypeOf(target.kind, "failed"), task, target.id)
      return { task, event }
    }).pipe(
      sql.withTransaction,
      retryingConflicts,
      Effect.catchTag("SqlError", Effect.die),
      Effect.flatMap(({ event, task }) => Effect.as(outbox.announce(event), Option.some(task))),
      Effect.catchTag("MovedOn", () => Effect.succeed(Option.none<VideoTask | ImageTask>())),
      Effect.withSpan("task.cancel", {
        attributes: { "task.id": target.id, "task.attempt": target.attempt, "task.error_code": failure.code }
      })
    )

  return { succeed, fail, cancel } as const
})

export class TaskOutcomes extends Context.Tag("TaskOutcomes")<TaskOutcomes, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(TaskOutcomes, make)
}
