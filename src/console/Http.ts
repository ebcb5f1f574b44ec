import { HttpApiBuilder, HttpApp, HttpServerResponse } from "@effect/platform"
import { Effect, Layer } from "effect"
import type { AccountSummary as AccountRow } from "../accounts/AccountList.ts"
import { GatewayApi } from "../Api.ts"
import type { LedgerLine as LedgerRow } from "../billing/LedgerQuery.ts"
import type { ChannelStateName } from "../channel/ChannelState.ts"
import { channelList, checkChannel, setChannelState } from "../ops/ChannelOps.ts"
import { readOptionalJson } from "../platform/http/Body.ts"
import { LiveStreams } from "../tasks/LiveStreams.ts"
import type { ConfirmedUploadSummary } from "../uploads/UploadList.ts"
import {
  type AccountSummary,
  type ConfirmedUpload,
  ConsoleApi,
  ConsolePrivate,
  type LedgerLine,
  StateChange
} from "./Api.ts"
import * as Asset from "./AssetHttp.ts"
import { ConsoleAuthLive } from "./ConsoleAuth.ts"
import * as Operator from "./OperatorHttp.ts"
import { overview } from "./Overview.ts"
import * as Session from "./SessionHttp.ts"
import { ConsoleSessions } from "./Sessions.ts"
import * as Task from "./TaskHttp.ts"
import * as Webhook from "./WebhookHttp.ts"

/** `Cache-Control: no-store` on the answer, unless the handler set its own (the asset content does). */
const ConsolePrivateLive = Layer.succeed(
  ConsolePrivate,
  HttpApp.appendPreResponseHandler((_, response) =>
    Effect.succeed(
      response.headers["cache-control"] === undefined
        ? HttpServerResponse.setHeader(response, "cache-control", "no-store")
        : response
    )
  )
)

/** A channel's state change with the optional reason of the body (the admin API's). */
const setChannel = (name: string, state: ChannelStateName) =>
  setChannelState(name, state, Effect.map(readOptionalJson(StateChange), (body) => body?.reason ?? null))

/**
 * The console's handlers (Api.ts), built against the gateway's contract
 * with the console's group added, as src/Gateway.ts serves it.
 */
const ConsoleGroupLive = HttpApiBuilder.group(GatewayApi.add(ConsoleApi), "console", (handlers) =>
  handlers
    .handle("getSession", () => Session.getSession)
    .handle("signIn", () => Session.signIn)
    .handle("signOut", () => Session.signOut)
    .handle("switchAccount", () => Session.switchAccount)
    .handle("listTasks", () => Task.listTasks)
    .handle("getTask", ({ path }) => Task.getTask(path.id))
    .handle("taskEvents", ({ path }) => Task.taskEvents(path.id))
    .handle("cancelTask", ({ path }) => Task.cancelTask(path.id))
    .handle("listAssets", () => Asset.listAssets)
    .handle("getAssetContent", ({ path }) => Asset.assetContent(path.id))
    .handle("deleteAsset", ({ path }) => Asset.deleteAsset(path.id))
    .handle("listUploads", () => Asset.listUploads)
    .handle("getWebhook", () => Webhook.getWebhook)
    .handle("setWebhook", () => Webhook.setWebhook)
    .handle("rotateWebhookKey", () => Webhook.rotateKey)
    .handle("testWebhook", () => Webhook.sendTest)
    .handle("listWebhookEvents", () => Webhook.listEvents)
    .handle("resendWebhookEvent", ({ path }) => Webhook.resend(path.id))
    .handle("replayWebhookEvents", () => Webhook.replay)
    .handle("listAccounts", () => Operator.listAccounts)
    .handle("createAccount", () => Operator.createAccount)
    .handle("getAccount", ({ path }) => Operator.getAccount(path.id))
    .handle("getAccountLedger", ({ path }) => Operator.accountLedger(path.id))
    .handle("addCredits", ({ path }) => Operator.addCredits(path.id))
    .handle("createKey", ({ path }) => Operator.createKey(path.id))
    .handle("disableKey", ({ path }) => Operator.disableKey(path.id))
    // The channel operations and the overview: the admin API's services, behind the operator's session.
    .handle("getOverview", () => overview)
    .handle("getMoney", () => Operator.money)
    .handle("listChannels", () => channelList)
    .handle("enableChannel", ({ path }) => setChannel(path.name, "enabled"))
    .handle("drainChannel", ({ path }) => setChannel(path.name, "draining"))
    .handle("disableChannel", ({ path }) => setChannel(path.name, "disabled"))
    .handle("checkChannel", ({ path }) => checkChannel(path.name)))

/** The console's group with its middleware and its session store; needs the gateway's services (src/Gateway.ts). */
export const ConsoleLive = ConsoleGroupLive.pipe(
  Layer.provide(Layer.merge(ConsoleAuthLive, ConsolePrivateLive)),
  Layer.provide(ConsoleSessions.layer),
  // The task page's live status: the same instance as the API's streams (layers are memoised by reference).
  Layer.provide(LiveStreams.layer)
)

type Same<A, B> = [A] extends [B] ? [B] extends [A] ? true : false : false

/**
 * The console's schemas of answers that other features give as TypeScript
 * types only must say exactly what those features return: a field added
 * there and not here would be dropped from the answer when it is encoded.
 * This fails to compile when they differ.
 */
export type SchemasMatchFeatures = [
  Same<typeof AccountSummary.Type, AccountRow>,
  Same<typeof LedgerLine.Type, LedgerRow>,
  Same<typeof ConfirmedUpload.Type, ConfirmedUploadSummary>
] extends [true, true, true] ? true : never
export const schemasMatchFeatures: SchemasMatchFeatures = true
