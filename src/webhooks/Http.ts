import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { AdminAuthLive } from "../accounts/Auth.ts"
import { GatewayApi } from "../Api.ts"
import { readJson } from "../platform/http/Body.ts"
import { readEventFilter } from "./EventQueryHttp.ts"
import { ReplayRequest, WebhookRequest } from "./Webhook.ts"
import { WebhookDeliveries } from "./WebhookDeliveries.ts"
import { Webhooks } from "./Webhooks.ts"

export const AdminWebhooksLive = HttpApiBuilder.group(
  GatewayApi,
  "adminWebhooks",
  (handlers) =>
    Effect.gen(function*() {
      const webhooks = yield* Webhooks
      const deliveries = yield* WebhookDeliveries
      return handlers
        .handle(
          "setWebhook",
          ({ path }) => Effect.flatMap(readJson(WebhookRequest), (req) => webhooks.setWebhook(path.id, req))
        )
        .handle("rotateWebhookKey", ({ path }) => webhooks.rotateWebhookKey(path.id))
        .handle("testWebhook", ({ path }) => webhooks.queueWebhookTest(path.id))
        .handle(
          "listWebhookEvents",
          ({ path }) => Effect.flatMap(readEventFilter, (f) => deliveries.listEvents(path.id, f))
        )
        .handle(
          "replayWebhookEvents",
          ({ path }) => Effect.flatMap(readJson(ReplayRequest), (req) => webhooks.replay(path.id, req))
        )
    })
).pipe(Layer.provide(AdminAuthLive))
