import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { GatewayApi } from "../Api.ts"
import { readJson } from "../platform/http/Body.ts"
import { readEventFilter } from "../webhooks/EventQueryHttp.ts"
import { WebhookDeliveries } from "../webhooks/WebhookDeliveries.ts"
import { CreateAccountRequest, CreateKeyRequest, CreditsRequest, WebhookRequest } from "./Account.ts"
import { Accounts } from "./Accounts.ts"
import { AdminAuthLive } from "./Auth.ts"

export const AdminLive = HttpApiBuilder.group(GatewayApi, "admin", (handlers) =>
  Effect.gen(function*() {
    const accounts = yield* Accounts
    const webhooks = yield* WebhookDeliveries
    return handlers
      .handle("createAccount", () => Effect.flatMap(readJson(CreateAccountRequest), accounts.create))
      .handle("getAccount", ({ path }) => accounts.detail(path.id))
      .handle("createKey", ({ path }) =>
        Effect.flatMap(readJson(CreateKeyRequest), (req) => accounts.issueKey(path.id, req)))
      .handle("disableKey", ({ path }) =>
        accounts.disableKey(path.key_id))
      .handle("addCredits", ({ path }) =>
        Effect.flatMap(readJson(CreditsRequest), (req) =>
          accounts.addCredits(path.id, req)))
      .handle("setWebhook", ({ path }) =>
        Effect.flatMap(readJson(WebhookRequest), (req) =>
          accounts.setWebhook(path.id, req)))
      .handle("rotateWebhookKey", ({ path }) =>
        accounts.rotateWebhookKey(path.id))
      .handle("testWebhook", ({ path }) =>
        accounts.queueWebhookTest(path.id))
      .handle(
        "listWebhookEvents",
        ({ path }) => Effect.flatMap(readEventFilter, (f) => webhooks.listEvents(path.id, f))
      )
  })).pipe(Layer.provide(AdminAuthLive))
