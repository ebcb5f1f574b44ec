// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect, Layer } from "effect"
import { createServer, type Server } from "node:http"
import type { AddressInfo, Socket } from "node:net"
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest"
import { IDLE_MS, UpstreamHttpClientLive } from "../../src/runtime/node/UpstreamHttpClient.ts"

/**
 * The channels' HttpClient on Node (src/runtime/node/UpstreamHttpClient.ts)
 * against a real HTTP server on loopback that numbers its connections:
 * polls and downloads share one kept-alive connection, every submit gets a
 * connection of its own, and each request is one `http.client` span.
 */
let server: Server
let base: string
const sockets = new Map<Socket, number>()
/** The connection number each request arrived on, in order. */
let seen: Array<{ readonly method: string; readonly connection: number }> = []

beforeAll(async () => {
  server = createServer((req, res) => {
    seen.push({ method: req.method!, connection: sockets.get(req.socket)! })
    req.resume()
    if (req.url === "/stalling") {
      // Half the body, then nothing for longer than the idle time-out, then the rest.
      res.write("{\"ok\":")
      setTimeout(() => res.end("true}"), IDLE_MS + 1_000)
      return
    }
    req.on("end", () => res.end(JSON.stringify({ ok: true })))
  })
  server.on("connection", (socket) => sockets.set(socket, sockets.size + 1))
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})
afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())))
beforeEach(() => {
  seen = []
})

const run = <A, E>(effect: Effect.Effect<A, E, HttpClient.HttpClient>) =>
  Effect.runPromise(Effect.provide(effect, UpstreamHttpClientLive))

/** Sends the requests one after the other, each read to its end, as the engine does. */
const sendAll = (requests: ReadonlyArray<HttpClientRequest.HttpClientRequest>) =>
  Effect.gen(function*() {
    const client = yield* HttpClient.HttpClient
    for (const request of requests) {
      const response = yield* client.execute(request)
      expect(response.status).toBe(200)
      expect(yield* response.json).toEqual({ ok: true })
    }
  }).pipe(Effect.scoped)

describe("UpstreamHttpClient (Node)", () => {
  it("sends polls and downloads over one kept-alive connection", async () => {
    const before = sockets.size
    await run(sendAll([
      HttpClientRequest.get(`${base}/tasks/1`),
      HttpClientRequest.get(`${base}/tasks/2`),
      HttpClientRequest.get(`${base}/files/1`)
    ]))
    expect(seen.map((r) => r.method)).toEqual(["GET", "GET", "GET"])
    expect(new Set(seen.map((r) => r.connection)).size).toBe(1)
    expect(sockets.size - before).toBe(1)
  })

  it("sends every submit (and any other method) on a connection of its own", async () => {
    const before = sockets.size
    await run(sendAll([
      HttpClientRequest.post(`${base}/tasks`).pipe(HttpClientRequest.bodyUnsafeJson({ prompt: "a" })),
      HttpClientRequest.get(`${base}/tasks/1`),
      HttpClientRequest.post(`${base}/tasks`).pipe(HttpClientRequest.bodyUnsafeJson({ prompt: "b" })),
      HttpClientRequest.del(`${base}/tasks/1`),
      HttpClientRequest.get(`${base}/tasks/1`)
    ]))
    expect(seen.map((r) => r.method)).toEqual(["POST", "GET", "POST", "DELETE", "GET"])
    const [post1, get1, post2, del, get2] = seen.map((r) => r.connection)
    // Four connections: one per POST and DELETE, one shared by the two GETs.
    expect(new Set([post1, post2, del, get1]).size).toBe(4)
    expect(get2).toBe(get1)
    expect(sockets.size - before).toBe(4)
  })

  it("lets a download that stalls longer than the idle time-out finish (only free connections time out)", async () => {
    await run(sendAll([HttpClientRequest.get(`${base}/stalling`), HttpClientRequest.get(`${base}/tasks/1`)]))
    expect(seen.map((r) => r.connection)).toEqual([seen[0]!.connection, seen[0]!.connection])
  }, 3 * IDLE_MS)

  it("makes one http.client span per request", async () => {
    // An exporter of its own: one that has been shut down (with a tracer's layer) drops every span.
    const exporter = new InMemorySpanExporter()
    const tracing = NodeSdk.layer(() => ({
      resource: { serviceName: "upstream-client-test" },
      spanProcessor: new SimpleSpanProcessor(exporter)
    }))
    // Read inside the run: the exporter forgets its spans when the layer's tracer shuts down.
    const names = await Effect.runPromise(
      Effect.gen(function*() {
        yield* sendAll([
          HttpClientRequest.get(`${base}/tasks/1`),
          HttpClientRequest.post(`${base}/tasks`).pipe(HttpClientRequest.bodyUnsafeJson({ prompt: "c" }))
        ])
        return exporter.getFinishedSpans().map((s) => s.name)
      }).pipe(Effect.provide(Layer.mergeAll(UpstreamHttpClientLive, tracing)))
    )
    expect(names.sort()).toEqual(["http.client GET", "http.client POST"])
  })
})
