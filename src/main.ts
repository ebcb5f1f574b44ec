import { HttpServer } from "@effect/platform"
import { NodeContext, NodeRuntime } from "@effect/platform-node"
import { Effect, Layer } from "effect"
import { gateway } from "./Gateway.ts"
import { environmentConfig, listenPort } from "./platform/AppConfig.ts"
import { JsonLogLive } from "./runtime/node/Logging.ts"
import * as NodeServer from "./runtime/node/NodeServer.ts"
import { NodeServicesLive } from "./runtime/node/NodeServices.ts"
import { SpawnHelperLive } from "./runtime/node/SpawnHelper.ts"
import { TracingLive } from "./runtime/node/Tracing.ts"
import { serviceArgs } from "./ServiceArgs.ts"

/**
 * Entry point on Node: reads the environment, then serves the API (ROLE=api
 * or all) and runs the task engine (ROLE=worker or all). SIGTERM and SIGINT
 * interrupt the main fiber; layers close in reverse order, so the server
 * drains and running tasks go back to the queue before the database closes.
 */
const Main = Layer.unwrapEffect(
  Effect.map(
    environmentConfig,
    (env) => gateway(NodeServer.layer({ host: env.host, port: listenPort(env) }).pipe(HttpServer.withLogAddress))
  )
)

// `--help`, `--version` and unknown arguments are answered before anything starts (src/ServiceArgs.ts).
const args = serviceArgs(process.argv.slice(2), "node dist/src/main.js")
if (args._tag === "Start") {
  Main.pipe(
    Layer.provide(NodeServicesLive),
    Layer.provide(TracingLive),
    // ffprobe and ffmpeg through a small helper process: a fork of the service costs its event loop (SpawnHelper.ts).
    Layer.provide(SpawnHelperLive),
    Layer.provide(NodeContext.layer),
    Layer.provide(JsonLogLive),
    Layer.launch,
    NodeRuntime.runMain({ disablePrettyLogger: true })
  )
} else {
  if (args.stdout !== undefined) process.stdout.write(args.stdout)
  if (args.stderr !== undefined) process.stderr.write(args.stderr)
  process.exitCode = args.code
}
