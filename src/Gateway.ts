import { Effect, Layer } from "effect"
import { HttpAppLive } from "./http/Server.ts"
import { migrate } from "./services/Database.ts"
import { ServicesLive } from "./services/index.ts"

/** The services with every migration applied; nothing is served before this is built. */
export const MigratedServicesLive = Layer.effectDiscard(
  Effect.tap(migrate, (applied) => Effect.logInfo("database ready").pipe(Effect.annotateLogs({ migrations_applied: applied })))
).pipe(Layer.provideMerge(ServicesLive))

/**
 * The whole gateway given an HTTP server layer: the runtime entry point
 * (`main.ts`) passes the Node server, tests pass one on a free loopback port.
 */
export const gateway = <ROut, E, R>(server: Layer.Layer<ROut, E, R>) =>
  HttpAppLive.pipe(
    Layer.provide(server),
    Layer.provideMerge(MigratedServicesLive)
  )
