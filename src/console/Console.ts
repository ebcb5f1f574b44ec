import { HttpApiBuilder, type HttpServerResponse } from "@effect/platform"
import type { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import type { Accounts } from "../accounts/Accounts.ts"
import type { AppConfig } from "../platform/AppConfig.ts"
import type { Secrets } from "../platform/Secrets.ts"
import type { ObjectStorage } from "../storage/ObjectStorage.ts"
import type { Assets } from "../tasks/Assets.ts"
import type { TaskStore } from "../tasks/TaskStore.ts"
import type { WebhookDeliveries } from "../webhooks/WebhookDeliveries.ts"
import { assetContent, deleteAsset, listAssets, listUploads } from "./AssetRoutes.ts"
import * as Operator from "./OperatorRoutes.ts"
import { answer } from "./Respond.ts"
import { getSession, signIn, signOut, switchAccount } from "./SessionRoutes.ts"
import { ConsoleSessions } from "./Sessions.ts"
import { bundleFile, indexPage, rootFile } from "./StaticFiles.ts"
import { getTask, listTasks } from "./TaskRoutes.ts"
import * as Webhook from "./WebhookRoutes.ts"

const API = "/console/api"

/** The gateway's services the console's handlers use; the router itself provides only the request. */
type Services =
  | AppConfig
  | Accounts
  | Assets
  | ConsoleSessions
  | ObjectStorage
  | Secrets
  | SqlClient.SqlClient
  | TaskStore
  | WebhookDeliveries

/**
 * The web console at `/console`: the built front end and the JSON endpoints
 * it calls, mounted on the gateway's router beside the HttpApi contract. It
 * is not part of the public contract (no OpenAPI entry, no typed client): it
 * authenticates by session cookie, not by bearer key, and may change with
 * its front end.
 */
export const ConsoleRoutesLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    const services = yield* Effect.context<Services>()
    const api = <E, R>(handler: Effect.Effect<HttpServerResponse.HttpServerResponse, E, R>) =>
      Effect.provide(answer(handler), services)
    yield* router.get("/console", indexPage)
    yield* router.get("/console/assets/:file", bundleFile)
    yield* router.get("/console/:file", rootFile)

    yield* router.get(`${API}/session`, api(getSession))
    yield* router.post(`${API}/session`, api(signIn))
    yield* router.del(`${API}/session`, api(signOut))
    yield* router.put(`${API}/session/account`, api(switchAccount))

    yield* router.get(`${API}/tasks`, api(listTasks))
    yield* router.get(`${API}/tasks/:id`, api(getTask))
    yield* router.get(`${API}/assets`, api(listAssets))
    yield* router.get(`${API}/assets/:id/content`, api(assetContent))
    yield* router.del(`${API}/assets/:id`, api(deleteAsset))
    yield* router.get(`${API}/uploads`, api(listUploads))

    yield* router.get(`${API}/webhook`, api(Webhook.getWebhook))
    yield* router.put(`${API}/webhook`, api(Webhook.setWebhook))
    yield* router.post(`${API}/webhook/rotate`, api(Webhook.rotateKey))
    yield* router.post(`${API}/webhook/test`, api(Webhook.sendTest))
    yield* router.get(`${API}/webhook/events`, api(Webhook.listEvents))
    yield* router.post(`${API}/webhook/events/:id/resend`, api(Webhook.resend))

    yield* router.get(`${API}/operator/accounts`, api(Operator.listAccounts))
    yield* router.post(`${API}/operator/accounts`, api(Operator.createAccount))
    yield* router.get(`${API}/operator/accounts/:id`, api(Operator.getAccount))
    yield* router.get(`${API}/operator/accounts/:id/ledger`, api(Operator.accountLedger))
    yield* router.post(`${API}/operator/accounts/:id/credits`, api(Operator.addCredits))
    yield* router.post(`${API}/operator/accounts/:id/keys`, api(Operator.createKey))
    yield* router.post(`${API}/operator/keys/:id/disable`, api(Operator.disableKey))
  })
)

/** The console's routes with their session store; needs the gateway's services (src/Gateway.ts). */
export const ConsoleLive = ConsoleRoutesLive.pipe(Layer.provide(ConsoleSessions.layer))
