import { HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Duration, Effect, Layer } from "effect"
import { createServer } from "node:http"

/**
 * The Node HTTP server. On shutdown it stops accepting at once and lets
 * in-flight requests finish; connections still open after `drain` are cut so
 * the process always exits within its stop budget (10 s).
 */
export const layer = (
  options: { readonly host: string; readonly port: number; readonly drain?: Duration.DurationInput }
) =>
  Layer.mergeAll(
    Layer.scoped(
      HttpServer.HttpServer,
      Effect.gen(function*() {
        // Long enough for a large direct upload to the local store; bodies read by handlers have their own limits.
        const server = createServer({ requestTimeout: 30 * 60_000, headersTimeout: 15_000, keepAliveTimeout: 5_000 })
        const http = yield* NodeHttpServer.make(() => server, { host: options.host, port: options.port })
        // Added after the server's own finalizer, so it runs first, while close() waits.
        yield* Effect.addFinalizer(() =>
          Effect.sync(() => {
            server.closeIdleConnections()
            setTimeout(() => server.closeAllConnections(), Duration.toMillis(options.drain ?? "8 seconds")).unref()
          })
        )
        return http
      })
    ),
    NodeHttpServer.layerContext
  )
