import { Layer } from "effect"
import { Registry } from "./Registry.ts"
import { Accounts } from "./Accounts.ts"
import { Assets } from "./Assets.ts"
import { Billing } from "./Billing.ts"
import { AppConfig } from "./AppConfig.ts"
import { SqlLive } from "./Database.ts"
import { ObjectStorage } from "./ObjectStorage.ts"
import { RateLimit } from "./RateLimit.ts"
import { Secrets } from "./Secrets.ts"
import { Outbox } from "./Outbox.ts"
import { Queue } from "./Queue.ts"
import { TaskOutcomes } from "./TaskOutcomes.ts"
import { TaskStore } from "./TaskStore.ts"
import { Webhooks } from "./Webhooks.ts"
import { MediaInspector } from "./MediaInspector.ts"
import { ReferenceMedia } from "./ReferenceMedia.ts"
import { RemoteMedia } from "./RemoteMedia.ts"
import { Uploads } from "./Uploads.ts"
import { UploadSweep } from "./UploadSweep.ts"

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
