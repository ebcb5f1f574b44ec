import { HttpRouter } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { ledgerOfTask } from "../billing/LedgerQuery.ts"
import { toCredits } from "../billing/Money.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { listPage } from "../platform/http/ListEnvelope.ts"
import { PageLimit, readQuery, UnixSeconds } from "../platform/http/ListQuery.ts"
import { Assets } from "../tasks/Assets.ts"
import { TaskKind, TaskStatus } from "../tasks/Task.ts"
import { findTaskRecord, type TaskRecord } from "../tasks/TaskRecord.ts"
import { toTaskObject } from "../tasks/TaskRow.ts"
import { TaskStore } from "../tasks/TaskStore.ts"
import { WebhookDeliveries } from "../webhooks/WebhookDeliveries.ts"
import { accountOf, currentSession } from "./ConsoleAuth.ts"
import { consoleError, json } from "./Respond.ts"

const Filter = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))

/** The list API's filters, plus `kind` (the log shows both kinds in one order) and `model`. */
const TaskLogParams = Schema.Struct({
  kind: Schema.optional(TaskKind),
  status: Schema.optional(TaskStatus),
  operation: Schema.optional(Schema.Literal("generation", "edit")),
  model: Schema.optional(Filter),
  client_reference_id: Schema.optional(Filter),
  created_after: Schema.optional(UnixSeconds),
  created_before: Schema.optional(UnixSeconds),
  after: Schema.optional(Filter),
  limit: Schema.optional(PageLimit)
})

/** The account a request may look at, with the session. */
export const viewer = Effect.flatMap(
  currentSession,
  (session) => Effect.map(accountOf(session), (accountId) => ({ session, accountId }))
)

/**
 * The task log, newest first. `Retry-After` names the polling interval the
 * API gives its callers; the page polls at it while it is open.
 */
export const listTasks = Effect.gen(function*() {
  const { accountId } = yield* viewer
  const p = yield* readQuery(TaskLogParams)
  const page = yield* (yield* TaskStore).list(accountId, p.kind, {
    status: p.status,
    operation: p.operation,
    model: p.model,
    clientReferenceId: p.client_reference_id,
    createdAfter: p.created_after,
    createdBefore: p.created_before,
    after: p.after,
    limit: p.limit ?? 20
  })
  const { limits } = yield* AppConfig
  return json(listPage(page.data, page.hasMore), 200, { "retry-after": String(limits.poll_interval_s) })
})

/** What only the operator sees: where the task ran, and any upstream ids the engine recorded. */
const operatorView = (row: TaskRecord) => ({
  channel: row.channel,
  attempt: row.attempt,
  charged_wallet_credits: toCredits(Number(row.charged_wallet_micros)),
  charged_subscription_credits: toCredits(Number(row.charged_subscription_micros)),
  refunded_at: row.refunded_at,
  // Whatever upstream columns the engine keeps (their names start with "upstream").
  upstream: Object.fromEntries(Object.entries(row).filter(([column]) => column.startsWith("upstream")))
})

/**
 * Everything about one task: the task object, the request as stored, its
 * ledger lines, its result files and its webhook events with every attempt.
 * Channel and upstream details go to the operator only.
 */
export const getTask = Effect.gen(function*() {
  const { session, accountId } = yield* viewer
  const { id } = yield* HttpRouter.params
  const sql = yield* SqlClient.SqlClient
  const found = yield* findTaskRecord(sql, accountId, id ?? "")
  if (Option.isNone(found)) return yield* consoleError(404, "task_not_found", "No such task under this account.")
  const row = found.value
  const assets = yield* (yield* Assets).list(accountId, { taskId: row.id, limit: 100 }).pipe(Effect.orDie)
  const events = yield* (yield* WebhookDeliveries).listEvents(accountId, {
    status: undefined,
    after: undefined,
    limit: 50,
    taskId: row.id
  })
  return json({
    object: "console.task",
    kind: row.kind,
    task: toTaskObject(row),
    request: row.request,
    ledger: yield* ledgerOfTask(sql, accountId, row.id),
    assets: assets.data,
    webhook_events: events.data,
    ...(session.role === "operator" ? { operator: operatorView(row) } : {})
  })
})
