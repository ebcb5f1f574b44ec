import { HttpClient, type HttpClientRequest } from "@effect/platform"
import { NodeHttpClient } from "@effect/platform-node"
import { Context, Effect, Layer } from "effect"

/**
 * How long an idle connection is kept for the next request. Below the idle
 * time-outs servers commonly use (Node's 5 s, nginx's 75 s), so the gateway
 * lets go of a connection before the upstream does. Node's agent applies it
 * to free connections only: a slow answer, or a download that stalls longer,
 * is not cut here (the channel's `timeouts` bound those).
 */
export const IDLE_MS = 4_000

/** Node's HTTP client over agents built with these options, released with the layer's scope. */
const clientWith = (options?: Parameters<typeof NodeHttpClient.makeAgent>[0]) =>
  Effect.map(
    Layer.build(NodeHttpClient.layerWithoutAgent.pipe(Layer.provide(NodeHttpClient.makeAgentLayer(options)))),
    Context.get(HttpClient.HttpClient)
  )

/**
 * The plain HttpClient of the channel ports (src/channel/Adapter.ts): for
 * upstreams an operator configured, so unlike TargetHttpClient it does not
 * refuse private addresses (a self-hosted upstream may live on one).
 * node:http rather than the undici client: the undici package does not take
 * Node's own FormData as a body, and multipart uploads (image edits) need it.
 *
 * GETs (polls and result downloads) reuse connections (keep-alive): every
 * running task polls its upstream every few seconds, and a new connection
 * each time costs a TCP and TLS handshake and leaves a socket in TIME_WAIT.
 * A GET that meets an upstream's just-closed idle connection asks the same
 * question again at the next look. Submits and every other method still go
 * out on a connection of their own: a request on a reused connection the
 * upstream has just closed fails with a reset that cannot be told from a
 * reset after the upstream took the request (channel/Transport.ts), and an
 * ambiguous submit may cost a second upstream task.
 */
export const UpstreamHttpClientLive = Layer.scoped(
  HttpClient.HttpClient,
  Effect.gen(function*() {
    const reusing = yield* clientWith({ keepAlive: true, scheduling: "lifo", timeout: IDLE_MS })
    const single = yield* clientWith()
    // No span of its own: the client that sends the request makes the one `http.client` span.
    const send = (request: Effect.Effect<HttpClientRequest.HttpClientRequest>) =>
      Effect.flatMap(request, (r) => (r.method === "GET" ? reusing : single).execute(r))
    return HttpClient.makeWith(send, Effect.succeed)
  })
)
