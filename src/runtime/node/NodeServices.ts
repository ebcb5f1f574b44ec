import { Layer } from "effect"
import { Sha256Live } from "./Digest.ts"
import { MediaToolsLive } from "./MediaTools.ts"
import { NotificationListenerLive } from "./PgListen.ts"
import { PostgresClientLive } from "./PostgresClient.ts"
import { S3RequestBodyLive } from "./S3RequestBody.ts"
import { TargetHttpClientLive } from "./TargetHttpClient.ts"
import { UpstreamHttpClientLive } from "./UpstreamHttpClient.ts"

/**
 * The ports the runtime-neutral core reaches on Node, in one place for every
 * Node composition (src/main.ts, and the tests' in-process gateway): where
 * ffmpeg is, the guarded HTTP client for caller-chosen URLs and the plain one
 * for upstreams, PostgreSQL (its pool and its LISTEN), S3 request bodies from
 * Node streams, SHA-256 by node:crypto (synchronous, which the fast routes'
 * quick path needs). What each process adds on top (tracing, the spawn helper,
 * logging) stays with its entry; Node's own services (files, paths,
 * processes) come from NodeContext below these.
 */
export const NodeServicesLive = Layer.mergeAll(
  MediaToolsLive,
  TargetHttpClientLive,
  S3RequestBodyLive,
  UpstreamHttpClientLive,
  NotificationListenerLive,
  PostgresClientLive,
  Sha256Live
)
