import { HttpApp, HttpServerResponse } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { Assets } from "../assets/Assets.ts"
import { ledgerOfTask } from "../billing/LedgerQuery.ts"
import { toCredits } from "../billing/Money.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { listPage } from "../platform/http/ListEnvelope.ts"
import { readQuery } from "../platform/http/ListQuery.ts"
import { TaskNotFound } from "../tasks/Errors.ts"
import { eventStream } from "../tasks/EventsHttp.ts"
import { TaskCancel } from "../tasks/TaskCancel.ts"
import { findTaskRecord, type TaskRecord } from "../tasks/TaskRecord.ts"
import { toTaskObject } from "../tasks/TaskRow.ts"
import { TaskStore } from "../tasks/TaskStore.ts"
import { WebhookDeliveries } from "../webhooks/WebhookDeliveries.ts"
import { CurrentViewer, type OperatorTaskView, TaskLogParams, type TaskPage } from "./Api.ts"

/**
 * The task log, newest first. `Retry-After` names the polling interval the
 * API gives its callers; the page polls at it while it is open.
 */
export const listTasks = Effect.gen(function*() {
  const { accountId } = yield* CurrentViewer
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
  yield* HttpApp.appendPreResponseHandler((_, response) =>
    Effect.succeed(HttpServerResponse.setHeader(response, "retry-after", String(limits.poll_interval_s)))
  )
  return listPage(page.data, page.hasMore)
})

/** What only the operator sees: where the task ran, and any upstream ids the engine recorded. */
const operatorView = (row: TaskRecord): typeof OperatorTaskView.Type => ({
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
export const getTask = (id: string) =>
  Effect.gen(function*() {
    const { session, accountId } = yield* CurrentViewer
    const sql = yield* SqlClient.SqlClient
    const found = yield* findTaskRecord(sql, accountId, id)
    if (Option.isNone(found)) return yield* new TaskNotFound({ message: "No such task under this account." })
    const row = found.value
    const assets = yield* (yield* Assets).list(accountId, { taskId: row.id, limit: 100 }).pipe(Effect.orDie)
    const events = yield* (yield* WebhookDeliveries).listEvents(accountId, {
      status: undefined,
      after: undefined,
      limit: 50,
      taskId: row.id
    }).pipe(Effect.catchTag("UnknownEventCursor", Effect.die))
    return {
      object: "console.task",
      kind: row.kind,
      task: toTaskObject(row),
      request: row.request,
      ledger: yield* ledgerOfTask(sql, accountId, row.id),
      assets: assets.data,
      webhook_events: events.data,
      ...(session.role === "operator" ? { operator: operatorView(row) } : {})
    } satisfies typeof TaskPage.Type
  })

/** The Cancel button: the viewed account's task, cancelled as the API's cancel does (tasks/TaskCancel.ts). */
export const cancelTask = (id: string) =>
  Effect.gen(function*() {
    const { accountId } = yield* CurrentViewer
    const found = yield* findTaskRecord(yield* SqlClient.SqlClient, accountId, id)
    if (Option.isNone(found)) return yield* new TaskNotFound({ message: "No such task under this account." })
    return yield* (yield* TaskCancel).cancel(accountId, found.value.kind, id)
  })

/**
 * The task page's live status: the API's event stream (tasks/EventsHttp.ts)
 * for a task of the account shown, bounded per session. The page reloads on
 * each event instead of polling.
 */
export const taskEvents = (id: string) =>
  Effect.gen(function*() {
    const { session, accountId } = yield* CurrentViewer
    const found = yield* findTaskRecord(yield* SqlClient.SqlClient, accountId, id)
    if (Option.isNone(found)) return yield* new TaskNotFound({ message: "No such task under this account." })
    return yield* eventStream(`console:${session.tokenHash}`, accountId, found.value.kind, id)
  })
