import { Layer } from "effect"
import { Registry } from "./catalog/Registry.ts"
import { Accounts } from "./accounts/Accounts.ts"
import { Assets } from "./tasks/Assets.ts"
import { Billing } from "./billing/Billing.ts"
import { AppConfig } from "./platform/AppConfig.ts"
import { SqlLive } from "./platform/Database.ts"
import { ObjectStorage } from "./storage/ObjectStorage.ts"
import { RateLimit } from "./accounts/RateLimit.ts"
import { Secrets } from "./platform/Secrets.ts"
import { Outbox } from "./events/Outbox.ts"
import { Queue } from "./tasks/engine/TaskQueue.ts"
import { TaskOutcomes } from "./tasks/engine/TaskOutcomes.ts"
import { TaskStore } from "./tasks/TaskStore.ts"
import { Webhooks } from "./webhooks/WebhookStore.ts"
import { MediaInspector } from "./media/MediaInspector.ts"
import { ReferenceMedia } from "./tasks/ReferenceMedia.ts"
import { RemoteMedia } from "./media/RemoteMedia.ts"
import { Uploads } from "./uploads/Uploads.ts"
import { UploadSweep } from "./uploads/UploadSweep.ts"

/** The database for the configured backend, on top of the checked configuration. */
export const DatabaseLive = SqlLive.pipe(Layer.provideMerge(AppConfig.layer))

/**
 * Uploads, media inspection and the reference media checks of tasks. Needs
 * MediaTools and TargetHttpClient from the runtime; ObjectStorage and
 * Registry are the same instances as below (layers are memoised by reference).
 */
const MediaServicesLive = ReferenceMedia.layer.pipe(
  Layer.provideMerge(Layer.mergeAll(Uploads.layer, RemoteMedia.layer)),
  Layer.provideMerge(MediaInspector.layer),
  Layer.provide(Layer.mergeAll(ObjectStorage.layer, Registry.layer))
)

/** Every service the HTTP handlers use. Needs FileSystem and Path from the runtime. */
export const ServicesLive = Layer.mergeAll(
  Accounts.layer,
  // The same ObjectStorage instance as below (layers are memoised by reference).
  Assets.layer.pipe(Layer.provide(ObjectStorage.layer)),
  TaskStore.layer,
  TaskOutcomes.layer,
  ObjectStorage.layer,
  RateLimit.layer,
  Registry.layer,
  Webhooks.layer,
  UploadSweep.layer.pipe(Layer.provide(ObjectStorage.layer)),
  MediaServicesLive
).pipe(
  Layer.provideMerge(Layer.mergeAll(Queue.layer, Billing.layer, Outbox.layer)),
  Layer.provideMerge(Secrets.layer),
  Layer.provideMerge(DatabaseLive)
)
