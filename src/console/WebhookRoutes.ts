import { HttpRouter } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Effect, Schema } from "effect"
import { WebhookRequest } from "../accounts/Account.ts"
import { Accounts } from "../accounts/Accounts.ts"
import { readJson } from "../platform/http/Body.ts"
import { PageLimit, readQuery } from "../platform/http/ListQuery.ts"
import { Secrets } from "../platform/Secrets.ts"
import { WebhookEventStatus } from "../webhooks/EventRecord.ts"
import { resendEvent } from "../webhooks/EventResend.ts"
import { WebhookDeliveries } from "../webhooks/WebhookDeliveries.ts"
import { accountOf, writableSession } from "./ConsoleAuth.ts"
import { consoleError, json } from "./Respond.ts"
import { viewer } from "./TaskRoutes.ts"

const writableAccount = Effect.flatMap(writableSession, accountOf)

/** The account's webhook: URL, enabled, and the `wk-` key (the owner configures the receiver with it). */
export const getWebhook = Effect.gen(function*() {
  const { accountId } = yield* viewer
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ webhook_url: string | null; webhook_enabled: boolean; webhook_key_enc: string | null }>`
    SELECT webhook_url, webhook_enabled, webhook_key_enc FROM accounts WHERE id = ${accountId}`.pipe(Effect.orDie)
  if (row === undefined) return yield* consoleError(404, "account_not_found", "The account no longer exists.")
  const key = row.webhook_key_enc === null ? null : yield* (yield* Secrets).decrypt(row.webhook_key_enc)
  return json({ object: "webhook", url: row.webhook_url, enabled: row.webhook_enabled, key })
})

export const setWebhook = Effect.gen(function*() {
  const accountId = yield* writableAccount
  const request = yield* readJson(WebhookRequest)
  return json({ object: "webhook", ...(yield* (yield* Accounts).setWebhook(accountId, request)) })
})

/** A new `wk-` key; the old one stops at once (deliveries read the key when they send). */
export const rotateKey = Effect.gen(function*() {
  const accountId = yield* writableAccount
  return json(yield* (yield* Accounts).rotateWebhookKey(accountId))
})

export const sendTest = Effect.gen(function*() {
  const accountId = yield* writableAccount
  return json(yield* (yield* Accounts).queueWebhookTest(accountId), 202)
})

const EventParams = Schema.Struct({
  status: Schema.optional(WebhookEventStatus),
  after: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))),
  limit: Schema.optional(PageLimit)
})

/** The delivery log, newest first, each event with every attempt. */
export const listEvents = Effect.gen(function*() {
  const { accountId } = yield* viewer
  const p = yield* readQuery(EventParams)
  return json(
    yield* (yield* WebhookDeliveries).listEvents(accountId, { status: p.status, after: p.after, limit: p.limit ?? 20 })
  )
})

export const resend = Effect.gen(function*() {
  const accountId = yield* writableAccount
  const { id } = yield* HttpRouter.params
  const sql = yield* SqlClient.SqlClient
  if (!(yield* resendEvent(sql, accountId, id ?? ""))) {
    return yield* consoleError(409, "event_not_resendable", "Only a failed or skipped event can be sent again.")
  }
  return json({ id, object: "webhook.event.resent", status: "pending" }, 202)
})
