import { Layer } from "effect"
import { Registry } from "./Registry.ts"
import { Accounts } from "./Accounts.ts"
import { Billing } from "./Billing.ts"
import { AppConfig } from "./AppConfig.ts"
import { SqlLive } from "./Database.ts"
import { RateLimit } from "./RateLimit.ts"
import { Secrets } from "./Secrets.ts"
import { TaskStore } from "./TaskStore.ts"

/** The database for the configured backend, on top of the checked configuration. */
export const DatabaseLive = SqlLive.pipe(Layer.provideMerge(AppConfig.layer))

/** Every service the HTTP handlers use. Needs FileSystem and Path from the runtime. */
export const ServicesLive = Layer.mergeAll(Accounts.layer, TaskStore.layer.pipe(Layer.provide(Billing.layer)), RateLimit.layer, Registry.layer).pipe(
  Layer.provideMerge(Secrets.layer),
  Layer.provideMerge(DatabaseLive)
)
