import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { readJson } from "../platform/http/Body.ts"
import { readQuery } from "../platform/http/ListQuery.ts"
import { resendEvent } from "../webhooks/EventResend.ts"
import { ReplayRequest, WebhookRequest } from "../webhooks/Webhook.ts"
import { WebhookDeliveries } from "../webhooks/WebhookDeliveries.ts"
import { Webhooks } from "../webhooks/Webhooks.ts"
import { CurrentViewer, EventParams } from "./Api.ts"
import { EventNotResendable } from "./Errors.ts"

const accountId = Effect.map(CurrentViewer, (viewer) => viewer.accountId)

/** The account's webhook: URL, enabled, and the `wk-` key (the owner configures the receiver with it). */
export const getWebhook = Effect.gen(function*() {
  const webhook = yield* Effect.flatMap(Webhooks, (w) => Effect.flatMap(accountId, w.get))
  return { object: "webhook", ...webhook } as const
})

export const setWebhook = Effect.gen(function*() {
  const request = yield* readJson(WebhookRequest)
  return { object: "webhook", ...(yield* (yield* Webhooks).setWebhook(yield* accountId, request)) } as const
})

/** The account's events of a window sent again, same ids (docs/webhooks.md, Replay). */
export const replay = Effect.gen(function*() {
  const request = yield* readJson(ReplayRequest)
  return yield* (yield* Webhooks).replay(yield* accountId, request)
})

/** A new `wk-` key; the old one stops at once (deliveries read the key when they send). */
export const rotateKey = Effect.flatMap(accountId, (id) => Effect.flatMap(Webhooks, (w) => w.rotateWebhookKey(id)))

export const sendTest = Effect.flatMap(accountId, (id) => Effect.flatMap(Webhooks, (w) => w.queueWebhookTest(id)))

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
