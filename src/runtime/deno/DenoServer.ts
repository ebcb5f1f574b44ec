import { Etag, HttpApp, HttpPlatform, HttpServer, HttpServerError } from "@effect/platform"
import { NodeContext } from "@effect/platform-node"
import { Duration, Effect, Layer, Option } from "effect"
import { Draining } from "../../platform/http/Draining.ts"
import { FastRoutes, type PlainAnswer, type StreamedBody } from "../../platform/http/FastRoutes.ts"

/**
 * The HTTP server on Deno: `Deno.serve` (Deno's own HTTP stack, not the
 * `node:http` emulation) running the Effect app as a web handler
 * (`HttpApp.toWebHandlerRuntime`, the same conversion `HttpApiBuilder.toWebHandler`
 * uses). The app is the one `src/Gateway.ts` composes; only the socket side
 * differs from the Node server.
 *
 * On shutdown it lets in-flight requests finish, then closes; after `drain`
 * it stops waiting so the process exits within its stop budget (10 s), as
 * the Node server does. Deno 2.9's `shutdown()` makes the body of every
 * request still being received unreadable at once (denoland/deno#36809), so
 * it is called only when no handler is running; until then a new request is
 * answered 503 with `Connection: close` instead of being refused at connect.
 */

/**
 * The request's whole body, for a fast route, or undefined when it has not
 * all come within `timeoutMs` (Deno ends it at its `Content-Length`).
 */
const bodyOf = (request: Request, timeoutMs: number) => {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), timeoutMs)))
  const read = request.arrayBuffer().then((buffer) => new Uint8Array(buffer))
  return Promise.race([read, late]).finally(() => clearTimeout(timer))
}

/** The answer while the server drains: the client should go to another replica, on a new connection. */
const unavailable = () => new Response(null, { status: 503, headers: { connection: "close", "retry-after": "1" } })

/**
 * A fast route's streamed body as a web stream Deno writes as the socket
 * takes it (no chunk is pulled ahead: high-water mark 0). The body is told
 * once when the answer is over: ended, cut (`abort` errors the stream, which
 * closes the connection), cancelled, or its request aborted by the client
 * going (also before the answer was ready, when Deno never reads the body).
 */
const readableOf = (body: StreamedBody, signal: AbortSignal) => {
  let closed = false
  const close = () => {
    if (closed) return
    closed = true
    body.close()
  }
  if (signal.aborted) close()
  else signal.addEventListener("abort", close, { once: true })
  return new ReadableStream<Uint8Array>({
    start: (controller) =>
      body.start(() => {
        controller.error(new Error("the client took nothing for too long"))
        close()
      }),
    pull: (controller) =>
      new Promise<void>((pulled) =>
        body.pull((chunk) => {
          if (chunk === null) {
            controller.close()
            close()
          } else controller.enqueue(chunk)
          pulled()
        })
      ),
    cancel: close
  }, { highWaterMark: 0 })
}

const responseOf = (a: PlainAnswer, signal: AbortSignal) =>
  new Response(a.stream === undefined ? a.body : readableOf(a.stream, signal), {
    status: a.status,
    headers: a.headers
  })

const make = (options: { readonly host: string; readonly port: number; readonly drain?: Duration.DurationInput }) =>
  Effect.gen(function*() {
    // Requests that arrive before the app is mounted (none in practice: `serve` runs while the layer is built) wait for it.
    let mounted: ((request: Request) => Promise<Response>) | undefined
    let mount: () => void = () => {}
    const ready = new Promise<void>((resolve) => (mount = resolve))
    const running = new Set<Promise<Response>>()
    let draining = false
    const handle = (request: Request): Promise<Response> => {
      if (draining) {
        return Promise.resolve(unavailable())
      }
      const response = mounted !== undefined ? mounted(request) : ready.then(() => mounted!(request))
      running.add(response)
      const settled = () => void running.delete(response)
      response.then(settled, settled)
      return response
    }
    /** Resolves once no handler runs (responses may still be streaming, which `shutdown()` lets finish). */
    const idle = async () => {
      while (running.size > 0) await Promise.allSettled([...running])
    }
    // A stop signal turns new requests away at once, whatever the other layers still have to close first.
    const stopSignals = ["SIGTERM", "SIGINT"] as const
    const onStop = () => void (draining = true)
    yield* Effect.acquireRelease(
      Effect.sync(() => stopSignals.forEach((signal) => Deno.addSignalListener(signal, onStop))),
      () => Effect.sync(() => stopSignals.forEach((signal) => Deno.removeSignalListener(signal, onStop)))
    )
    const endless = yield* Effect.serviceOption(Draining)
    const server = yield* Effect.acquireRelease(
      // Deno.serve binds synchronously: a taken port or an unknown host throws here, failing the start.
      Effect.try({
        try: () =>
          Deno.serve({
            hostname: options.host,
            port: options.port,
            // The service logs its own address (HttpServer.withLogAddress); Deno's banner would be a second, unstructured line.
            onListen: () => {},
            // Same as an unhandled defect on Node: a 500 with no body, never a stack trace to the client.
            onError: () => new Response(null, { status: 500 })
          }, handle),
        catch: (cause) => new HttpServerError.ServeError({ cause })
      }),
      (server) =>
        // Endless responses (live status streams) are told to end first, so shutdown() does not wait on them.
        Option.match(endless, { onNone: () => Effect.void, onSome: (d) => d.begin }).pipe(
          Effect.zipRight(Effect.promise(async () => {
            draining = true
            await idle()
            await server.shutdown()
          }))
        ).pipe(
          Effect.timeoutOption(options.drain ?? "8 seconds"),
          Effect.asVoid
        )
    )
    return HttpServer.make({
      address: { _tag: "TcpAddress", hostname: server.addr.hostname, port: server.addr.port },
      serve: (httpApp, middleware) =>
        Effect.gen(function*() {
          const runtime = yield* Effect.runtime<never>()
          const app = HttpApp.toWebHandlerRuntime(runtime)(httpApp, middleware)
          // The fast routes (platform/http/FastRoutes.ts) first; every other request goes to the Effect app.
          const fast = yield* Effect.serviceOption(FastRoutes)
          mounted = Option.isNone(fast) ? app : (request) => {
            const url = new URL(request.url)
            const answer = fast.value.handle({
              method: request.method,
              url: url.pathname + url.search,
              header: (name) => request.headers.get(name) ?? undefined,
              body: (timeoutMs) => bodyOf(request, timeoutMs)
            })
            return answer === undefined
              ? app(request)
              : answer.then((a) => responseOf(a, request.signal))
          }
          mount()
          // The app's services start closing after this; requests from then on are not started on them.
          yield* Effect.addFinalizer(() => Effect.sync(() => (mounted = () => Promise.resolve(unavailable()))))
        })
    })
  })

/**
 * What an app served this way needs besides the server: file responses
 * through the platform FileSystem (`HttpPlatform.layer`, web streams rather
 * than Node streams), ETags, and the file system, paths and command executor
 * of @effect/platform-node, which run on Deno through its Node compatibility.
 */
export const layerContext = Layer.mergeAll(HttpPlatform.layer, Etag.layerWeak).pipe(
  Layer.provideMerge(NodeContext.layer)
)

export const layer = (
  options: { readonly host: string; readonly port: number; readonly drain?: Duration.DurationInput }
) => Layer.mergeAll(Layer.scoped(HttpServer.HttpServer, make(options)), layerContext)
