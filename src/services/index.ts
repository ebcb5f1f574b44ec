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

/** The database for the configured backend, on top of the checked configuration. */
export const DatabaseLive = SqlLive.pipe(Layer.provideMerge(AppConfig.layer))

/** Every service the HTTP handlers use. Needs FileSystem and Path from the runtime. */
export const ServicesLive = Layer.mergeAll(
  Accounts.layer,
  Assets.layer,
  TaskStore.layer,
  TaskOutcomes.layer.pipe(Layer.provide(Outbox.layer)),
  ObjectStorage.layer,
  RateLimit.layer,
  Registry.layer
).pipe(
  Layer.provideMerge(Layer.mergeAll(Queue.layer, Billing.layer)),
  Layer.provideMerge(Secrets.layer),
  Layer.provideMerge(DatabaseLive)
)
