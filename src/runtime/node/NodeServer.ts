import { HttpServer } from "@effect/platform"
import { NodeHttpServer } from "@effect/platform-node"
import { Duration, Effect, Layer, Option } from "effect"
import { createServer, type IncomingMessage, type ServerOptions, type ServerResponse } from "node:http"
import { Draining } from "../../platform/http/Draining.ts"
import { FastRoutes, type StreamedBody } from "../../platform/http/FastRoutes.ts"

/** A header's value; a repeated one joined as Node joins it for `headers`. */
const headerOf = (request: IncomingMessage, name: string) => {
  const value = request.headers[name]
  return Array.isArray(value) ? value.join(", ") : value
}

/**
 * The request's whole body, for a fast route: Node's parser ends it at its
 * `Content-Length`; a connection that breaks off first rejects, one that
 * has not sent it all within `timeoutMs` gives undefined.
 */
const bodyOf = (request: IncomingMessage, timeoutMs: number) =>
  new Promise<Uint8Array | undefined>((resolve, reject) => {
    const chunks: Array<Buffer> = []
    const timer = setTimeout(() => resolve(undefined), timeoutMs)
    request.on("data", (chunk: Buffer) => chunks.push(chunk))
    request.once("end", () => {
      clearTimeout(timer)
      resolve(chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks))
    })
    request.once("close", () => {
      clearTimeout(timer)
      if (!request.complete) reject(new Error("the request body was cut off"))
    })
    request.once("error", reject)
  })

/**
 * A fast route's streamed body written as the socket takes it: the next chunk
 * is pulled once `write` took the last, or at `drain`. The body is told once
 * when the answer is over: ended, cut (`abort` destroys the socket) or the
 * client gone.
 */
const writeStreamed = (response: ServerResponse, body: StreamedBody) => {
  response.once("close", body.close)
  body.start(() => response.destroy())
  const pullNext = () => body.pull(deliver)
  const deliver = (chunk: Uint8Array | null) => {
    if (chunk === null) response.end()
    else if (response.write(chunk)) pullNext()
    else response.once("drain", pullNext)
  }
  pullNext()
}

/**
 * The Node HTTP server. On shutdown it stops accepting at once and lets
 * in-flight requests finish; connections still open after `drain` are cut so
 * the process always exits within its stop budget (10 s).
 */
export const layer = (
  options: {
    readonly host: string
    readonly port: number
    readonly drain?: Duration.DurationInput
    /** Options of Node's server beyond the service's own (tests set `keepAliveTimeout`). */
    readonly server?: ServerOptions
  }
) =>
  Layer.mergeAll(
    Layer.scoped(
      HttpServer.HttpServer,
      Effect.gen(function*() {
        // Long enough for a large direct upload to the local store; bodies read by handlers have their own limits.
        const server = createServer({
          requestTimeout: 30 * 60_000,
          headersTimeout: 15_000,
          keepAliveTimeout: 5_000,
          ...options.server
        })
        const http = yield* NodeHttpServer.make(() => server, { host: options.host, port: options.port })
        const draining = yield* Effect.serviceOption(Draining)
        // Added after the server's own finalizer, so it runs first, while close() waits: endless
        // responses (live status streams) are told to end, idle connections are closed.
        yield* Effect.addFinalizer(() =>
          Effect.zipRight(
            Option.match(draining, { onNone: () => Effect.void, onSome: (d) => d.begin }),
            Effect.sync(() => {
              server.closeIdleConnections()
              setTimeout(() => server.closeAllConnections(), Duration.toMillis(options.drain ?? "8 seconds")).unref()
            })
          )
        )
        return HttpServer.make({
          address: http.address,
          // The fast routes (platform/http/FastRoutes.ts) first; every other request goes to the Effect app.
          // No WebSocket upgrade handler: the gateway serves none.
          serve: (app, middleware) =>
            Effect.gen(function*() {
              const fast = yield* Effect.serviceOption(FastRoutes)
              if (Option.isNone(fast)) {
                return yield* (middleware === undefined ? http.serve(app) : http.serve(app, middleware as never))
              }
              const handler = yield* (middleware === undefined
                ? NodeHttpServer.makeHandler(app)
                : NodeHttpServer.makeHandler(app, middleware as never))
              const listener = (request: IncomingMessage, response: ServerResponse) => {
                const answer = fast.value.handle({
                  method: request.method ?? "GET",
                  url: request.url ?? "/",
                  header: (name) => headerOf(request, name),
                  body: (timeoutMs) => bodyOf(request, timeoutMs)
                })
                if (answer === undefined) return handler(request, response)
                answer.then((a) => {
                  if (response.destroyed) return a.stream?.close()
                  if (a.stream !== undefined) {
                    response.writeHead(a.status, a.headers)
                    return writeStreamed(response, a.stream)
                  }
                  response.writeHead(a.status, { ...a.headers, "content-length": Buffer.byteLength(a.body) })
                  response.end(a.body)
                })
              }
              yield* Effect.addFinalizer(() => Effect.sync(() => server.off("request", listener)))
              server.on("request", listener)
            })
        })
      })
    ),
    NodeHttpServer.layerContext
  )
