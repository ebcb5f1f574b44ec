import { FetchHttpClient, HttpServer } from "@effect/platform"
import { Effect, Layer, Logger } from "effect"
import { gateway } from "../../Gateway.ts"
import { environmentConfig, listenPort } from "../../platform/AppConfig.ts"
import { jsonLineLogger } from "../../platform/JsonLogLine.ts"
import { serviceArgs } from "../../ServiceArgs.ts"
import { Sha256Live } from "../node/Digest.ts"
import { MediaToolsLive } from "../node/MediaTools.ts"
import { NotificationListenerLive } from "../node/PgListen.ts"
import { PostgresClientLive } from "../node/PostgresClient.ts"
import { S3RequestBodyLive } from "../node/S3RequestBody.ts"
import { TargetHttpClientLive } from "../node/TargetHttpClient.ts"
import { TracingLive } from "../node/Tracing.ts"
import { runMain } from "./DenoRuntime.ts"
import * as DenoServer from "./DenoServer.ts"

/**
 * Entry point on Deno (`deno task start`, `npm run start:deno`): the same
 * gateway as `src/main.ts`, served by `Deno.serve`. The other runtime layers
 * are the Node ones, which run unchanged on Deno's Node compatibility: the
 * ffmpeg/ffprobe paths of the installer packages, `pg` for LISTEN, the
 * guarded `node:http` client for webhooks and reference media (its checks
 * hook Node's DNS lookup and socket creation, which Deno's `fetch` does not
 * expose), the Node streams the AWS SDK pipes as streamed S3 bodies, and
 * the OTLP exporter. Files, paths and child processes come
 * from @effect/platform-node's FileSystem, Path and CommandExecutor. Channel
 * upstreams (operator-configured, not guarded) go through Deno's own fetch.
 */
const Main = Layer.unwrapEffect(
  Effect.map(
    environmentConfig,
    (env) => gateway(DenoServer.layer({ host: env.host, port: listenPort(env) }).pipe(HttpServer.withLogAddress))
  )
)

// `--help`, `--version` and unknown arguments are answered before anything starts (src/ServiceArgs.ts).
const args = serviceArgs(Deno.args, "deno task start")
if (args._tag === "Start") {
  Main.pipe(
    Layer.provide(MediaToolsLive),
    Layer.provide(TargetHttpClientLive),
    Layer.provide(S3RequestBodyLive),
    Layer.provide(FetchHttpClient.layer),
    Layer.provide(NotificationListenerLive),
    Layer.provide(PostgresClientLive),
    // node:crypto's synchronous digest, as on Node: the fast routes' quick read needs one (Web Crypto's is a promise).
    Layer.provide(Sha256Live),
    Layer.provide(TracingLive),
    Layer.provide(DenoServer.layerContext),
    // Logger.json's lines (platform/JsonLogLine.ts), one console.log each.
    Layer.provide(Logger.replace(Logger.defaultLogger, Logger.withConsoleLog(jsonLineLogger))),
    Layer.launch,
    runMain({ disablePrettyLogger: true })
  )
} else {
  if (args.stdout !== undefined) console.log(args.stdout.trimEnd())
  if (args.stderr !== undefined) console.error(args.stderr.trimEnd())
  Deno.exitCode = args.code
}
