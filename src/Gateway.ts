import { Effect, Layer } from "effect"
import { HttpAppLive } from "./platform/http/Server.ts"
import { environmentConfig } from "./platform/AppConfig.ts"
import { migrate } from "./platform/Database.ts"
import { ServicesLive } from "./Services.ts"
import { SandboxGenerator } from "../channels/sandbox/SandboxGenerator.ts"
import { SandboxImageGenerator } from "../channels/sandbox/SandboxImageGenerator.ts"
import { SandboxImageRenderer } from "../channels/sandbox/SandboxImageRenderer.ts"
import { SandboxRenderer } from "../channels/sandbox/SandboxRenderer.ts"
import { WorkersLive } from "./Workers.ts"

/** The services with every migration applied; nothing is served or run before this is built. */
export const MigratedServicesLive = Layer.effectDiscard(
  Effect.tap(migrate, (applied) => Effect.logInfo("database ready").pipe(Effect.annotateLogs({ migrations_applied: applied })))
).pipe(Layer.provideMerge(ServicesLive))

/** The task engine's fibers with the generators they drive. Needs MediaTools from the runtime. */
export const EngineLive = WorkersLive.pipe(
  Layer.provide([SandboxGenerator.layer, SandboxImageGenerator.layer]),
  Layer.provide([SandboxRenderer.layer, SandboxImageRenderer.layer])
)

/**
 * The whole gateway given an HTTP server layer: the API (ROLE=api), the task
 * engine (ROLE=worker) or both (ROLE=all, the default) over one set of
 * services. The runtime entry point (`main.ts`) passes the Node server, tests
 * pass one on a free loopback port.
 */
export const gateway = <ROut, E, R>(server: Layer.Layer<ROut, E, R>) =>
  Layer.unwrapEffect(
    Effect.map(environmentConfig, (env) => {
      const api = HttpAppLive.pipe(Layer.provide(server))
      switch (env.role) {
        case "api":
          return api
        case "worker":
          return EngineLive
        case "all":
          return Layer.merge(api, EngineLive)
      }
    })
  ).pipe(Layer.provideMerge(MigratedServicesLive))
