import { SqlClient } from "@effect/sql"
import { Clock, Context, Data, Effect, Layer, Option } from "effect"
import { Billing, type ChargeSplit, type Priced } from "../billing/Billing.ts"
import { retryingConflicts } from "../platform/Database.ts"
import type { PlainTrace } from "../platform/http/QuickFrame.ts"
import { IdPrefix, newId } from "../platform/Ids.ts"
import { Metrics } from "../platform/metrics/Metrics.ts"
import { PooledQuery } from "../platform/PooledQuery.ts"
import { BalanceAlerts } from "../webhooks/BalanceAlerts.ts"
import { IdempotencyConflict, InvalidTaskRequest } from "./Errors.ts"
import { type CreateTask, createTask, createTaskPooled } from "./sql/createTask.ts"
import { notifyQueuedPooled } from "./sql/notifyQueued.ts"
import { CURRENT_VERSION } from "./StoredRequest.ts"
import type { ImageTask, TaskKind, TaskStatus, VideoTask } from "./Task.ts"
import { taskColumns, type TaskRow, toTaskObject } from "./TaskRow.ts"
import { makeWakeups } from "./Wakeups.ts"

/** What a create hands the store: the task and what it costs. */
export interface NewTask {
  readonly accountId: string
  /** The model token that creates it: its spend limits apply, its spend counts the charge. */
  readonly keyId: string
  readonly kind: TaskKind
  readonly model: string
  readonly operation: string
  /** The validated request the engine will execute. */
  readonly request: unknown
  readonly clientReferenceId: string | null
  readonly metadata: Record<string, unknown> | null
  readonly idempotencyKey: string | null
  /** Digest of the request content, compared when an Idempotency-Key is reused. */
  readonly digest: string
  /** What it is priced by: Billing works out the price, the create's statement takes it. */
  readonly price: Priced
  /** The provider channel whose workers run it. */
  readonly channel: string
  /** W3C trace context of the create request, so the engine's spans join its trace. */
  readonly traceparent: string | null
  /** The caller's deadline (`Cancel-After`) in seconds from now; null for none. */
  readonly cancelAfterSeconds?: number | null | undefined
}

/** What a replay charges. */
const NOTHING: ChargeSplit = { walletMicros: 0, subscriptionMicros: 0 }

/** The INSERT found the Idempotency-Key taken: the transaction is rolled back and the original replayed. */
class KeyTaken extends Data.TaggedError("KeyTaken") {}

export interface ListFilter {
  readonly status?: TaskStatus | undefined
  readonly operation?: string | undefined
  /** The console's filter; the public list API has none. */
  readonly model?: string | undefined
  readonly clientReferenceId?: string | undefined
  readonly createdAfter?: number | undefined
  readonly createdBefore?: number | undefined
  readonly after?: string | undefined
  readonly limit: number
}

export interface TaskPage {
  readonly data: ReadonlyArray<VideoTask | ImageTask>
  readonly hasMore: boolean
}

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const pooled = yield* PooledQuery
  const columns = sql.literal(taskColumns())
  const billing = yield* Billing
  const metrics = yield* Metrics
  const balanceAlerts = yield* BalanceAlerts
  const wakeUp = makeWakeups((channel) => notifyQueuedPooled(pooled, channel))

  /** The task this account already created with the key: replayed when the content is the same, else 409. */
  const replayOf = (task: NewTask) =>
    Effect.gen(function*() {
      if (task.idempotencyKey === null) return Option.none()
      const [existing] = yield* sql<TaskRow>`
        SELECT ${columns} FROM tasks WHERE account_id = ${task.accountId} AND idempotency_key = ${task.idempotencyKey}`
      if (existing === undefined) return Option.none()
      if (existing.request_digest !== task.digest || existing.kind !== task.kind) {
        return yield* new IdempotencyConflict()
      }
      return Option.some({ task: toTaskObject(existing), replayed: true, charged: NOTHING })
    })

  /** The original task of a key already used, else the refusal. */
  const replayOr = <E>(task: NewTask, refused: E) =>
    Effect.flatMap(replayOf(task), Option.match({ onNone: () => Effect.fail(refused), onSome: Effect.succeed }))

  /**
   * Creates a queued task and pre-charges it; with an Idempotency-Key
   * already used by this account, answers the original task (same content)
   * or 409 (different content) and charges nothing.
   *
   * One statement (`create_task`, sql/createTask.ts), so a create is one
   * round trip and holds the account's lock for none: the checks, the task's
   * INSERT and the debit under the account's lock, in its own transaction.
   * Concurrent creates with one key meet at that lock: the second finds the
   * key taken once the first has committed, writes nothing, and replays the
   * first. A key already used also wins over a balance that can no longer
   * pay, a queue that is full or a spend limit: the original is replayed,
   * not refused. The rare create whose charge crosses the account's
   * low-balance threshold is made again in a transaction that also records
   * the `account.balance_low` event, so the event and the charge commit
   * together.
   */
  const create = (task: NewTask) =>
    Effect.gen(function*() {
      const id = newId(IdPrefix.task)
      // Milliseconds for the deadline (a whole second early would cut a short Cancel-After), seconds for the rest.
      const nowMs = yield* Clock.currentTimeMillis
      const now = Math.floor(nowMs / 1000)
      const statement = (allowLow: boolean) => {
        const create: CreateTask = {
          id,
          ledgerId: newId(IdPrefix.ledger),
          accountId: task.accountId,
          keyId: task.keyId,
          terms: billing.terms(task.price),
          allowLow,
          kind: task.kind,
          model: task.model,
          operation: task.operation,
          request: JSON.stringify(task.request),
          requestVersion: CURRENT_VERSION,
          clientReferenceId: task.clientReferenceId,
          metadata: task.metadata === null ? null : JSON.stringify(task.metadata),
          idempotencyKey: task.idempotencyKey,
          digest: task.digest,
          now,
          channel: task.channel,
          traceContext: task.traceparent === null ? null : JSON.stringify({ traceparent: task.traceparent }),
          cancelAt: task.cancelAfterSeconds == null ? null : nowMs + task.cancelAfterSeconds * 1000
        }
        // The first run is outside any transaction, on the pool; the low-balance run is inside one, on the SqlClient.
        return (allowLow ? createTask(sql, create) : createTaskPooled(pooled, create)).pipe(
          Effect.flatMap(([row]) =>
            row === undefined ? Effect.die(new Error(`account ${task.accountId} vanished`)) : Effect.succeed(row)
          )
        )
      }
      const first = yield* statement(false)
      const { alert, row } = first.outcome === "balance_low"
        ? yield* Effect.gen(function*() {
          const row = yield* statement(true)
          // The charge that took the wallet below the account's threshold writes the one alert, in its transaction.
          const alert = row.outcome === "charged" && row.balance_low
            ? yield* balanceAlerts.record(task.accountId)
            : undefined
          return { row, alert }
        }).pipe(sql.withTransaction)
        : { row: first, alert: undefined }
      if (row.outcome === "key_taken") return yield* new KeyTaken()
      const split = yield* billing.settle(row, task.price, now)
      return { task: toTaskObject(row.task!), replayed: false, charged: split, alert }
    }).pipe(
      retryingConflicts,
      Effect.catchTag("KeyTaken", () =>
        Effect.flatMap(
          replayOf(task),
          Option.match({
            onNone: () => Effect.die(new Error("idempotency row vanished")),
            onSome: Effect.succeed
          })
        )),
      // A key already used wins over a refusal that came after it: the original is replayed.
      Effect.catchTags({
        InsufficientBalance: (refused) => replayOr(task, refused),
        SpendLimitExceeded: (refused) => replayOr(task, refused),
        TooManyQueuedTasks: (refused) =>
          replayOr(task, refused).pipe(
            Effect.tapError(() => Effect.sync(() => metrics.limitRefused(refused.group, "max_queued")))
          )
      }),
      // The wake-up goes out after the commit, not inside it: PostgreSQL takes one
      // global lock at the commit of every transaction that NOTIFYs, which would queue
      // all creates behind each other; and creates share wake-ups (Wakeups.ts). Lost
      // between commit and NOTIFY (a crash), the task is still found by the workers'
      // periodic look, which is also why a failed NOTIFY does not fail a create that
      // has committed.
      Effect.tap((created) =>
        created.replayed ? Effect.void : Effect.suspend(() => {
          const { subscriptionMicros, walletMicros } = created.charged
          metrics.taskCreated(task.kind, task.model, walletMicros + subscriptionMicros)
          return Effect.zipRight(
            wakeUp(task.channel),
            "alert" in created && created.alert ? balanceAlerts.announce(created.alert) : Effect.void
          )
        })
      ),
      Effect.catchTag("SqlError", Effect.die),
      // Every create: no stack trace per span, as on the polling path (an Error and its capture each).
      Effect.withSpan("TaskStore.create", {
        attributes: { "task.kind": task.kind, "task.model": task.model },
        captureStackTrace: false
      })
    )

  const find = (accountId: string, kind: TaskKind, id: string) =>
    sql<TaskRow>`SELECT ${columns} FROM tasks WHERE id = ${id} AND account_id = ${accountId} AND kind = ${kind}`.pipe(
      Effect.map((rows) => Option.map(Option.fromNullable(rows[0]), toTaskObject)),
      Effect.orDie,
      // The polling path: no stack trace per span (each one costs an Error and its formatting).
      Effect.withSpan("TaskStore.find", { attributes: { "task.id": id, "task.kind": kind }, captureStackTrace: false })
    )

  const findWithKeyText = `
    SELECT k.disabled_at AS key_disabled_at, ${taskColumns("t")}
    FROM api_keys k LEFT JOIN tasks t ON t.id = $1 AND t.account_id = k.account_id AND t.kind = $2
    WHERE k.id = $3`

  /**
   * The task of the caller's account, read together with the calling key's
   * current state: a key disabled through any replica shows here at once,
   * whatever a replica's key cache still holds (KeyCache.ts), in the same
   * round trip as the read. Both looked up by primary key. Nothing when the
   * key row is gone. The polling path's one query, so it goes through
   * PooledQuery rather than the SqlClient's statement machinery.
   */
  const findWithKey = (keyId: string, kind: TaskKind, id: string): Effect.Effect<Option.Option<FoundWithKey>> =>
    pooled.rows<KeyAndTaskRow>(findWithKeyText, [id, kind, keyId]).pipe(
      Effect.map(foundWithKey),
      Effect.orDie,
      Effect.withSpan("TaskStore.findWithKey", {
        attributes: { "task.id": id, "task.kind": kind },
        captureStackTrace: false
      })
    )

  /**
   * `findWithKey` without an effect, for the fast routes' quick path, where
   * the database's pool runs a statement without one (PooledQuery.rowsNow):
   * the same statement and span, through the caller's `trace`.
   */
  const rowsNow = pooled.rowsNow
  const findWithKeyNow = rowsNow === undefined ? undefined : (
    keyId: string,
    kind: TaskKind,
    id: string,
    trace: PlainTrace
  ): Promise<Option.Option<FoundWithKey>> =>
    trace(
      "TaskStore.findWithKey",
      { "task.id": id, "task.kind": kind },
      () => rowsNow<KeyAndTaskRow>(findWithKeyText, [id, kind, keyId]).then(foundWithKey)
    )

  /** Tasks of this account among `ids`, in the order of `ids`, and the ids not found. */
  const findMany = (accountId: string, kind: TaskKind, ids: ReadonlyArray<string>) =>
    sql<TaskRow>`SELECT ${columns} FROM tasks WHERE account_id = ${accountId} AND kind = ${kind} AND ${
      sql.in("id", ids)
    }`.pipe(
      Effect.map((rows) => {
        const byId = new Map(rows.map((row) => [row.id, toTaskObject(row)]))
        return {
          data: ids.flatMap((id) => byId.get(id) ?? []),
          missing: ids.filter((id) => !byId.has(id))
        }
      }),
      Effect.orDie,
      Effect.withSpan("TaskStore.findMany", { attributes: { "task.kind": kind, "task.count": ids.length } })
    )

  /**
   * Newest first in exact creation order (the insert sequence, not the
   * one-second `created_at`); `after` continues strictly below the task with
   * that id (the previous page's last).
   */
  const list = (accountId: string, kind: TaskKind | undefined, filter: ListFilter) =>
    Effect.gen(function*() {
      let cursor: { seq: number } | undefined
      if (filter.after !== undefined) {
        ;[cursor] = yield* sql<{ seq: number }>`
          SELECT seq FROM tasks WHERE id = ${filter.after} AND account_id = ${accountId}
            ${kind === undefined ? sql`` : sql`AND kind = ${kind}`}`
        if (cursor === undefined) {
          return yield* new InvalidTaskRequest({
            code: "invalid_request",
            message: `"after" names no ${kind === undefined ? "" : `${kind} `}task of this account.`
          })
        }
      }
      const conditions = [
        sql`account_id = ${accountId}`,
        ...(kind === undefined ? [] : [sql`kind = ${kind}`]),
        ...(filter.status ? [sql`status = ${filter.status}`] : []),
        ...(filter.operation ? [sql`operation = ${filter.operation}`] : []),
        ...(filter.model ? [sql`model = ${filter.model}`] : []),
        ...(filter.clientReferenceId !== undefined ? [sql`client_reference_id = ${filter.clientReferenceId}`] : []),
        ...(filter.createdAfter !== undefined ? [sql`created_at >= ${filter.createdAfter}`] : []),
        ...(filter.createdBefore !== undefined ? [sql`created_at <= ${filter.createdBefore}`] : []),
        ...(cursor ? [sql`seq < ${cursor.seq}`] : [])
      ]
      const rows = yield* sql<TaskRow>`
        SELECT ${columns} FROM tasks WHERE ${sql.and(conditions)}
        ORDER BY seq DESC
        LIMIT ${filter.limit + 1}`
      return { data: rows.slice(0, filter.limit).map(toTaskObject), hasMore: rows.length > filter.limit }
    }).pipe(
      Effect.catchTag("SqlError", Effect.die),
      Effect.withSpan("TaskStore.list", { attributes: { "task.kind": kind ?? "any" } })
    )

  return { create, find, findWithKey, findWithKeyNow, findMany, list } as const
})

type KeyAndTaskRow = TaskRow & { readonly key_disabled_at: number | null }

/** The row of `findWithKey`'s statement as what it found: nothing when the key row is gone. */
const foundWithKey = (rows: ReadonlyArray<KeyAndTaskRow>): Option.Option<FoundWithKey> =>
  Option.map(Option.fromNullable(rows[0]), (row) => ({
    keyEnabled: row.key_disabled_at === null,
    // A LEFT JOIN that found no task leaves the task's columns null.
    task: row.id === null ? Option.none() : Option.some(toTaskObject(row))
  }))

/** A task read with the calling key's state (TaskStore.findWithKey). */
export interface FoundWithKey {
  readonly keyEnabled: boolean
  readonly task: Option.Option<VideoTask | ImageTask>
}

export class TaskStore extends Context.Tag("TaskStore")<TaskStore, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(TaskStore, make)
}
