import { HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect, Schema } from "effect"
import {
  CreateAccountRequest,
  CreateKeyRequest,
  CreditsRequest,
  KeyLimitsRequest,
  LowBalanceRequest
} from "../../src/accounts/Account.ts"
import { LedgerParams } from "../../src/accounts/Api.ts"
import { GatewayApi } from "../../src/Api.ts"
import { gatewayHttp, normalize } from "../../src/client/Http.ts"
import { refine } from "../../src/ClientApi.ts"
import { ReconcileWindow, StateChange } from "../../src/ops/ChannelsApi.ts"
import { ReplayRequest, WebhookRequest } from "../../src/webhooks/Webhook.ts"
import { run } from "./api.ts"
import { ADMIN_TOKEN } from "./gateway.ts"
import type { Target } from "./wire.ts"

/**
 * The admin API as tests call it: `HttpApiClient` derived from the contract
 * (`GatewayApi`'s admin groups), with the request bodies the handlers read by
 * hand declared from the same schemas they check against, and bearer
 * `ADMIN_TOKEN`. Answers are decoded; a failure rejects with `GatewayError`.
 */
const AdminClientApi = refine(
  refine(GatewayApi, "admin", {
    createAccount: (e) => e.setPayload(CreateAccountRequest),
    createKey: (e) => e.setPayload(CreateKeyRequest),
    addCredits: (e) => e.setPayload(CreditsRequest),
    setKeyLimits: (e) => e.setPayload(KeyLimitsRequest),
    setLowBalance: (e) => e.setPayload(LowBalanceRequest),
    listLedger: (e) => e.setUrlParams(LedgerParams)
  }),
  "adminWebhooks",
  {
    setWebhook: (e) => e.setPayload(WebhookRequest),
    replayWebhookEvents: (e) => e.setPayload(ReplayRequest),
    listWebhookEvents: (e) =>
      e.setUrlParams(Schema.Struct({
        status: Schema.optional(Schema.String),
        limit: Schema.optional(Schema.NumberFromString),
        after: Schema.optional(Schema.String)
      }))
  }
)

/** A channel's state changes read their optional body (a reason) by hand; the client sends `{}` for none. */
const AdminWithChannelsApi = refine(AdminClientApi, "adminChannels", {
  enableChannel: (e) => e.setPayload(StateChange),
  drainChannel: (e) => e.setPayload(StateChange),
  disableChannel: (e) => e.setPayload(StateChange),
  // The window is read by hand from the query (ChannelsHttp.ts).
  reconcileChannel: (e) => e.setUrlParams(ReconcileWindow)
})

const adminClient = (gw: Target) =>
  Effect.flatMap(HttpClient.HttpClient, (http) =>
    HttpApiClient.makeWith(AdminWithChannelsApi, {
      httpClient: HttpClient.mapRequest(gatewayHttp(http), HttpClientRequest.bearerToken(ADMIN_TOKEN)),
      baseUrl: gw.url
    }))

export type AdminClient = Effect.Effect.Success<ReturnType<typeof adminClient>>

// Deriving a client walks every endpoint of the contract: done once per gateway.
const admins = new Map<string, Promise<AdminClient>>()

/** Calls of the admin API on `gw`: `adminApi(gw)((c) => c.admin.getAccount({ path: { id } }))`. */
export const adminApi = (gw: Target) => <A, E>(f: (c: AdminClient) => Effect.Effect<A, E>): Promise<A> => {
  let client = admins.get(gw.url)
  if (client === undefined) {
    client = run(gw, {}, adminClient(gw))
    admins.set(gw.url, client)
  }
  return client.then((c) => run(gw, {}, normalize(f(c))))
}

/** An account with one key of each kind, through the admin API. */
export const createAccount = async (gw: Target, body: CreateAccountRequest = { name: "acme" }) => {
  const call = adminApi(gw)
  const account = await call((c) => c.admin.createAccount({ payload: body }))
  const model = await call((c) => c.admin.createKey({ path: { id: account.id }, payload: { kind: "model" } }))
  const resource = await call((c) => c.admin.createKey({ path: { id: account.id }, payload: { kind: "resource" } }))
  return { id: account.id, account, model, resource }
}
export type TestAccount = Awaited<ReturnType<typeof createAccount>>

/** The admin calls tests make most, bound to `gw`; `call` for any other. */
export const operator = (gw: Target) => {
  const call = adminApi(gw)
  return {
    call,
    account: (id: string) => call((c) => c.admin.getAccount({ path: { id } })),
    addCredits: (id: string, payload: CreditsRequest) => call((c) => c.admin.addCredits({ path: { id }, payload })),
    setWebhook: (id: string, payload: WebhookRequest) =>
      call((c) => c.adminWebhooks.setWebhook({ path: { id }, payload })),
    rotateWebhookKey: (id: string) => call((c) => c.adminWebhooks.rotateWebhookKey({ path: { id } })),
    testWebhook: (id: string) => call((c) => c.adminWebhooks.testWebhook({ path: { id } })),
    webhookEvents: (id: string, urlParams: { status?: string; limit?: number; after?: string } = {}) =>
      call((c) => c.adminWebhooks.listWebhookEvents({ path: { id }, urlParams })),
    task: (id: string) => call((c) => c.adminTasks.getTask({ path: { id } })),
    channels: () => call((c) => c.adminChannels.listChannels()),
    channel: (name: string) => call((c) => c.adminChannels.getChannel({ path: { name } })),
    /** What the channel's provider says it ran in `[from, to)` (Unix seconds) against the attempts recorded. */
    reconcile: (name: string, from: number, to: number) =>
      call((c) => c.adminChannels.reconcileChannel({ path: { name }, urlParams: { from, to } })),
    /** Enables, drains or disables a channel, with a reason or none. */
    setChannelState: (name: string, to: "enable" | "drain" | "disable", reason?: string) => {
      const request = { path: { name }, payload: reason === undefined ? {} : { reason } }
      return call((c) =>
        to === "enable"
          ? c.adminChannels.enableChannel(request)
          : to === "drain"
          ? c.adminChannels.drainChannel(request)
          : c.adminChannels.disableChannel(request)
      )
    },
    checkChannel: (name: string) => call((c) => c.adminChannels.checkChannel({ path: { name } }))
  }
}
