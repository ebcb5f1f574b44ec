import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { WebhookRequest } from "../accounts/Account.ts"
import { Accounts } from "../accounts/Accounts.ts"
import { AccountNotFound } from "../accounts/Errors.ts"
import { readJson } from "../platform/http/Body.ts"
import { readQuery } from "../platform/http/ListQuery.ts"
import { Secrets } from "../platform/Secrets.ts"
import { resendEvent } from "../webhooks/EventResend.ts"
import { WebhookDeliveries } from "../webhooks/WebhookDeliveries.ts"
import { CurrentViewer, EventParams } from "./Api.ts"
import { EventNotResendable } from "./Errors.ts"

const accountId = Effect.map(CurrentViewer, (viewer) => viewer.accountId)

/** The account's webhook: URL, enabled, and the `wk-` key (the owner configures the receiver with it). */
export const getWebhook = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const [row] = yield* sql<{ webhook_url: string | null; webhook_enabled: boolean; webhook_key_enc: string | null }>`
    SELECT webhook_url, webhook_enabled, webhook_key_enc FROM accounts WHERE id = ${yield* accountId}`.pipe(
    Effect.orDie
  )
  if (row === undefined) return yield* new AccountNotFound({ message: "The account no longer exists." })
  const key = row.webhook_key_enc === null ? null : yield* (yield* Secrets).decrypt(row.webhook_key_enc)
  return { object: "webhook", url: row.webhook_url, enabled: row.webhook_enabled, key } as const
})

export const setWebhook = Effect.gen(function*() {
  const request = yield* readJson(WebhookRequest)
  return { object: "webhook", ...(yield* (yield* Accounts).setWebhook(yield* accountId, request)) } as const
})

/** A new `wk-` key; the old one stops at once (deliveries read the key when they send). */
export const rotateKey = Effect.flatMap(accountId, (id) => Effect.flatMap(Accounts, (a) => a.rotateWebhookKey(id)))

export const sendTest = Effect.flatMap(accountId, (id) => Effect.flatMap(Accounts, (a) => a.queueWebhookTest(id)))

/** The delivery log, newest first, each event with every attempt. */
export const listEvents = Effect.gen(function*() {
  const p = yield* readQuery(EventParams)
  return yield* (yield* WebhookDeliveries).listEvents(yield* accountId, {
    status: p.status,
    after: p.after,
    limit: p.limit ?? 20
  })
})

export const resend = (id: string) =>
  Effect.gen(function*() {
    if (!(yield* resendEvent(yield* SqlClient.SqlClient, yield* accountId, id))) {
      return yield* new EventNotResendable()
    }
    return { id, object: "webhook.event.resent", status: "pending" } as const
  })
