import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer, Option } from "effect"
import { Accounts } from "./accounts/Accounts.ts"
import { AdminLive } from "./accounts/Http.ts"
import { RateLimit } from "./accounts/RateLimit.ts"
import { SpendLimits } from "./accounts/SpendLimits.ts"
import { GatewayApi } from "./Api.ts"
import { Assets } from "./assets/Assets.ts"
import { AssetsLive } from "./assets/Http.ts"
import { Billing } from "./billing/Billing.ts"
import { UpstreamCallbacksLive } from "./callbacks/Http.ts"
import { ModelsLive } from "./catalog/Http.ts"
import { Registry } from "./catalog/Registry.ts"
import { CALLBACK_PATH, CallbackTokens } from "./channel/CallbackTokens.ts"
import { Channels } from "./channel/Channels.ts"
import { ChannelStates } from "./channel/ChannelStates.ts"
import { ConsoleApi } from "./console/Api.ts"
import { ConsoleLive } from "./console/Http.ts"
import { ConsoleFilesLive } from "./console/StaticFiles.ts"
import { ImagesLive } from "./images/Http.ts"
import { MediaInspector } from "./media/MediaInspector.ts"
import { RemoteMedia } from "./media/RemoteMedia.ts"
import { WorkerOpsApi } from "./ops/Api.ts"
import { AdminChannelsLive } from "./ops/ChannelsHttp.ts"
import { channelStartup } from "./ops/ChannelStartup.ts"
import { registerGauges } from "./ops/Gauges.ts"
import { OpsLive, WorkerOpsLive } from "./ops/Http.ts"
import { METRICS_PATH, MetricsRouteLive } from "./ops/MetricsHttp.ts"
import { AppConfig, type Environment, environmentConfig } from "./platform/AppConfig.ts"
import { migrate, SqlLive } from "./platform/Database.ts"
import { Draining } from "./platform/http/Draining.ts"
import { FastRoutes } from "./platform/http/FastRoutes.ts"
import { httpApp } from "./platform/http/Server.ts"
import { MetricsLive } from "./platform/metrics/MetricsLive.ts"
import { Secrets } from "./platform/Secrets.ts"
import { Redaction } from "./retention/Redaction.ts"
import { ResultSweep } from "./retention/ResultSweep.ts"
import { retentionSweeper } from "./retention/RetentionSweeper.ts"
import { StorageLive } from "./storage/Http.ts"
import { ObjectStorage } from "./storage/ObjectStorage.ts"
import { AdminTasksLive } from "./tasks/AdminTaskHttp.ts"
import { TaskControlLive } from "./tasks/ControlHttp.ts"
import { TaskCreateLive } from "./tasks/CreateHttp.ts"
import { breakerReport } from "./tasks/engine/BreakerReport.ts"
import { Breakers } from "./tasks/engine/Breakers.ts"
import { Cancellation, TaskCancelLive } from "./tasks/engine/Cancellation.ts"
import { channelWorker } from "./tasks/engine/ChannelWorker.ts"
import { reaper } from "./tasks/engine/Reaper.ts"
import { ResultSpool } from "./tasks/engine/ResultSpool.ts"
import { storeRetrier } from "./tasks/engine/StoreRetrier.ts"
import { TaskOutcomes } from "./tasks/engine/TaskOutcomes.ts"
import { TaskQueue } from "./tasks/engine/TaskQueue.ts"
import { upstreamPoller } from "./tasks/engine/UpstreamPoller.ts"
import { TaskEventsLive } from "./tasks/EventsHttp.ts"
import { fastTaskCreate } from "./tasks/FastTaskCreate.ts"
import { fastTaskEvents } from "./tasks/FastTaskEvents.ts"
import { fastTaskRead } from "./tasks/FastTaskRead.ts"
import { TaskReadLive } from "./tasks/Http.ts"
import { LiveStreams } from "./tasks/LiveStreams.ts"
import { TaskQuoteLive } from "./tasks/QuoteHttp.ts"
import { Quotes } from "./tasks/Quotes.ts"
import { ReferenceMedia } from "./tasks/ReferenceMedia.ts"
import { StreamSlots } from "./tasks/StreamSlots.ts"
import { Tasks } from "./tasks/Tasks.ts"
import { TaskStore } from "./tasks/TaskStore.ts"
import { TaskWait } from "./tasks/TaskWait.ts"
import { UploadsLive } from "./uploads/Http.ts"
import { Uploads } from "./uploads/Uploads.ts"
import { UploadSweep } from "./uploads/UploadSweep.ts"
import { uploadSweeper } from "./uploads/UploadSweeper.ts"
import { AdminUsageLive } from "./usage/Http.ts"
import { Usage } from "./usage/Usage.ts"
import { BalanceAlerts } from "./webhooks/BalanceAlerts.ts"
import { webhookWorker } from "./webhooks/DeliveryWorker.ts"
import { AdminWebhooksLive } from "./webhooks/Http.ts"
import { Outbox } from "./webhooks/Outbox.ts"
import { WebhookDeliveries } from "./webhooks/WebhookDeliveries.ts"
import { Webhooks } from "./webhooks/Webhooks.ts"

/** The database for the configured backend, on top of the checked configuration. */
export const DatabaseLive = SqlLive.pipe(Layer.provideMerge(AppConfig.layer))

/**
 * The model catalog over the configured channels: the plugins and adapters
 * `config/models.json` names, loaded and checked. Needs the channel ports
 * (FileSystem, Path, CommandExecutor, HttpClient, MediaTools) from the runtime.
 */
export const CatalogLive = Registry.layer.pipe(Layer.provideMerge(Channels.layer))

/**
 * Uploads, media inspection and the reference media checks of tasks. Needs
 * MediaTools and TargetHttpClient from the runtime; ObjectStorage and
 * the catalog are the same instances as below (layers are memoised by reference).
 */
const MediaServicesLive = ReferenceMedia.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(Uploads.layer, RemoteMedia.layer)),
  Layer.provideMerge(MediaInspector.layer),
  Layer.provide(Layer.mergeAll(ObjectStorage.layer, CatalogLive))
)

/**
 * Every service the HTTP handlers use. Needs FileSystem and Path from the
 * runtime, and its NotificationListener (LISTEN on PostgreSQL).
 */
export const ServicesLive = Layer.mergeAll(
  Accounts.layer,
  SpendLimits.layer,
  // The operator's money: the usage report and the losses.
  Usage.layer,
  // The same ObjectStorage instance as below (layers are memoised by reference).
  Assets.layer.pipe(Layer.provide(ObjectStorage.layer)),
  TaskStore.layer,
  // Waiting on tasks (streams, long polls, the synchronous image endpoints): one LISTEN per process.
  TaskWait.layer,
  // Creating tasks (no HTTP): the same TaskStore, catalog and reference checks (layers are memoised by reference).
  Tasks.layer.pipe(Layer.provide(Layer.mergeAll(TaskStore.layer, CatalogLive, MediaServicesLive))),
  // Quotes: the create's checks and price (the same Tasks), over the balances.
  Quotes.layer.pipe(
    Layer.provide(Tasks.layer.pipe(Layer.provide(Layer.mergeAll(TaskStore.layer, CatalogLive, MediaServicesLive)))),
    Layer.provide(CatalogLive)
  ),
  // The per-key bound of open live status streams on this replica.
  StreamSlots.layer,
  TaskOutcomes.layer,
  // Cancels and deadlines (the engine's), with the port the handlers and the console cancel through.
  TaskCancelLive.pipe(
    Layer.provideMerge(Cancellation.layer),
    Layer.provide(Layer.mergeAll(TaskOutcomes.layer, TaskStore.layer, CatalogLive))
  ),
  // The engine's per-process circuit breakers (tasks/engine/Breakers.ts), beside the queue they steer.
  Breakers.layer,
  ObjectStorage.layer,
  RateLimit.layer,
  CatalogLive,
  // Upstream callback URLs per channel: the engine puts them in submits, the API receives them.
  CallbackTokens.layer.pipe(Layer.provide(CatalogLive)),
  WebhookDeliveries.layer,
  Webhooks.layer,
  UploadSweep.layer.pipe(Layer.provide(ObjectStorage.layer)),
  // Retention and data minimisation: results past their group's retention, requests redacted once ended.
  ResultSweep.layer.pipe(Layer.provide(ObjectStorage.layer)),
  Redaction.layer.pipe(
    Layer.provide(
      Layer.mergeAll(ObjectStorage.layer, CatalogLive, UploadSweep.layer.pipe(Layer.provide(ObjectStorage.layer)))
    )
  ),
  MediaServicesLive
).pipe(
  // The low-balance alert a create writes with its charge, into the outbox.
  Layer.provideMerge(BalanceAlerts.layer),
  // Operators' channel states are read by the API (routing creates) and the engine (claims, failover).
  Layer.provideMerge(Layer.mergeAll(TaskQueue.layer, Billing.layer, Outbox.layer, ChannelStates.layer)),
  Layer.provideMerge(Secrets.layer),
  Layer.provideMerge(DatabaseLive),
  // One set of instruments for the whole service (platform/metrics): every feature records into it.
  Layer.provideMerge(MetricsLive)
)

/** The services with every migration applied; nothing is served or run before this is built. */
export const MigratedServicesLive = Layer.effectDiscard(
  Effect.tap(
    migrate,
    (applied) => Effect.logInfo("database ready").pipe(Effect.annotateLogs({ migrations_applied: applied }))
  ).pipe(
    Effect.zipRight(channelStartup.pipe(Effect.catchAllCause((c) => Effect.logWarning("channel report failed", c)))),
    // The gauges read from the database at each collection, registered once the tables exist. In this layer's
    // own effect: built as a layer merged beside it, the log lines of in-process task runs lost their task_id
    // and channel annotations after the run's first line (the storage-outage test reads them).
    Effect.zipRight(registerGauges)
  )
).pipe(Layer.provideMerge(ServicesLive))

/**
 * What the server answers: the contract (src/Api.ts) plus the console's group, which is internal to the
 * console's pages (left out of `/openapi.json`; the typed client is made from GatewayApi alone).
 */
export const ServedApi = GatewayApi.add(ConsoleApi)

/** The handlers of every group the server answers, each from its feature's `Http.ts`. */
export const ApiLive = HttpApiBuilder.api(ServedApi).pipe(
  Layer.provide([
    OpsLive,
    AdminLive,
    AdminWebhooksLive,
    AdminTasksLive,
    AdminChannelsLive,
    AdminUsageLive,
    ModelsLive,
    TaskReadLive,
    TaskControlLive,
    TaskCreateLive,
    TaskQuoteLive,
    TaskEventsLive,
    ImagesLive,
    StorageLive,
    AssetsLive,
    UploadsLive,
    ConsoleLive
  ])
)

/**
 * The HTTP application: the handlers, `/openapi.json`, `/docs`, the console's files and the upstream
 * callback route, wrapped by the gateway middleware.
 */
export const HttpAppLive = httpApp(
  ServedApi,
  Layer.mergeAll(ApiLive, ConsoleFilesLive, UpstreamCallbacksLive, MetricsRouteLive),
  // The routes served beside the contract, by their templates, for the HTTP metrics' `route` label.
  [
    `GET ${METRICS_PATH}`,
    "GET /openapi.json",
    "GET /docs",
    "GET /console",
    "GET /console/assets/:file",
    `POST ${CALLBACK_PATH}/:token`
  ]
)

/**
 * What a worker replica serves on `OPS_PORT`: `/healthz`, `/readyz` and
 * `/metrics` (its own counters: the tasks it ended, the upstream calls it
 * made), through the same middleware; any other path is unmatched (404).
 */
export const WorkerHttpAppLive = httpApp(
  WorkerOpsApi,
  Layer.mergeAll(HttpApiBuilder.api(WorkerOpsApi).pipe(Layer.provide(WorkerOpsLive)), MetricsRouteLive),
  [`GET ${METRICS_PATH}`]
)

/**
 * The contract's endpoints that the server answers beside the router (platform/http/FastRoutes.ts): a
 * task's status, its live status stream (whose open streams the same LiveStreams serves as the
 * handlers', layers being memoised by reference) and a video create.
 */
export const FastRoutesLive = Layer.unwrapEffect(
  Effect.map(Effect.all([fastTaskRead, fastTaskEvents, fastTaskCreate]), (routes) => FastRoutes.layer(routes))
).pipe(Layer.provide(LiveStreams.layer))

/**
 * The long-running fibers of a worker process (ROLE=worker or all): one
 * worker per channel that an enabled model is routed to, with the channel's
 * runner made first (a broken adapter stops the start), the lease reaper,
 * the retrier of results waiting for object storage, the webhook delivery
 * worker, the sweeper of expired uploads and that of results and requests
 * past their retention. They stop
 * with the layer's scope; a task interrupted mid-run goes back to the queue,
 * a webhook attempt is sent again.
 */
export const WorkersLive = Layer.scopedDiscard(
  Effect.gen(function*() {
    const registry = yield* Registry
    const channels = yield* Channels
    const used = new Set(
      [...registry.videoModels, ...registry.imageModels].flatMap((m) => m.routes.map((r) => r.channel))
    )
    for (const name of used) {
      yield* channels.runner(name)
      yield* Effect.forkScoped(channelWorker(name, channels.get(name)!.settings))
      yield* Effect.forkScoped(upstreamPoller(name))
    }
    yield* Effect.forkScoped(breakerReport([...used]))
    yield* Effect.forkScoped(reaper)
    yield* Effect.forkScoped(storeRetrier)
    yield* Effect.forkScoped(webhookWorker)
    yield* Effect.forkScoped(uploadSweeper)
    yield* Effect.forkScoped(retentionSweeper)
  })
  // The spool where results wait while object storage is away: only workers make or store results.
).pipe(Layer.provide(ResultSpool.layer))

/**
 * The whole gateway given an HTTP server layer: the API (ROLE=api), the task
 * engine (ROLE=worker; with `OPS_PORT`, its health and metrics served too) or
 * both (ROLE=all, the default) over one set of services. The runtime entry
 * point (`main.ts`) passes the Node server, tests pass one on a free
 * loopback port.
 */
export const gateway = <ROut, E, R>(server: Layer.Layer<ROut, E, R>) => {
  // Each part chosen by ROLE on its own (an empty layer where the role has none of it).
  const byRole = <A, E1, R1>(layer: Layer.Layer<A, E1, R1>, runs: (env: Environment) => boolean) =>
    Layer.unwrapEffect(Effect.map(environmentConfig, (env) => runs(env) ? layer : Layer.empty))
  // Draining reaches both the server (which begins it) and the handlers (whose endless streams end on it).
  const api = HttpAppLive.pipe(Layer.provide(server), Layer.provide(FastRoutesLive), Layer.provide(Draining.layer))
  return Layer.mergeAll(
    byRole(api, (env) => env.role !== "worker"),
    byRole(WorkerHttpAppLive.pipe(Layer.provide(server)), (env) => env.role === "worker" && Option.isSome(env.opsPort)),
    byRole(WorkersLive, (env) => env.role !== "api")
  ).pipe(Layer.provideMerge(MigratedServicesLive))
}
