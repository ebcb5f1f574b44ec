import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { ConfigProvider, Layer } from "effect"
import { createServer } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { TracingLive } from "../../src/runtime/node/Tracing.ts"
import { backend } from "../support/database.ts"
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../support/gateway.ts"
import { raw } from "../support/http.ts"

const exporter = new InMemorySpanExporter()
let gw: TestGateway
beforeAll(async () => {
  gw = await startGateway(
    {},
    NodeSdk.layer(() => ({
      resource: { serviceName: "gateway-test" },
      spanProcessor: new SimpleSpanProcessor(exporter)
    }))
  )
})
afterAll(() => gw?.close())

describe(`tracing (${backend})`, () => {
  it("every HTTP request is a server span, with service spans beneath it", async () => {
    exporter.reset()
    // Raw requests: the caller's `traceparent` header is the point.
    const traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
    const reply = await raw(gw, "POST", "/admin/v1/accounts", {
      key: ADMIN_TOKEN,
      json: { name: "traced" },
      headers: { traceparent }
    })
    expect(reply.status).toBe(201)
    await raw(gw, "GET", "/nope")

    const spans = exporter.getFinishedSpans()
    const servers = spans.filter((s) => s.kind === 1 /* SERVER */)
    expect(servers).toHaveLength(2)
    const create = servers.find((s) => s.attributes["url.path"] === "/admin/v1/accounts")!
    expect(create.attributes["http.request.method"]).toBe("POST")
    expect(create.attributes["http.response.status_code"]).toBe(201)
    // The caller's trace context is continued.
    expect(create.spanContext().traceId).toBe("0af7651916cd43dd8448eb211c80319c")
    // The Authorization header is never recorded.
    expect(JSON.stringify(create.attributes)).not.toContain(ADMIN_TOKEN)

    const service = spans.find((s) => s.name === "Accounts.create")!
    expect(service).toBeDefined()
    expect(service.spanContext().traceId).toBe(create.spanContext().traceId)
    const notFound = servers.find((s) => s.attributes["url.path"] === "/nope")!
    expect(notFound.attributes["http.response.status_code"]).toBe(404)
  })
})

describe("OTLP export", () => {
  it("exports spans and metrics to OTEL_EXPORTER_OTLP_ENDPOINT over OTLP/HTTP", async () => {
    const received: Array<{ path: string; type: string; bytes: number; body: string }> = []
    const collector = createServer((req, res) => {
      const chunks: Array<Buffer> = []
      req.on("data", (c: Buffer) => chunks.push(c))
      req.on("end", () => {
        const body = Buffer.concat(chunks)
        received.push({
          path: req.url ?? "",
          type: req.headers["content-type"] ?? "",
          bytes: body.length,
          body: String(body)
        })
        res.writeHead(200, { "content-type": "application/json" }).end("{}")
      })
    })
    await new Promise<void>((resolve) => collector.listen(0, "127.0.0.1", resolve))
    const endpoint = `http://127.0.0.1:${(collector.address() as AddressInfo).port}`
    const tracing = TracingLive.pipe(
      Layer.provide(
        Layer.setConfigProvider(ConfigProvider.fromMap(new Map([["OTEL_EXPORTER_OTLP_ENDPOINT", endpoint]])))
      )
    )
    const exported = await startGateway({}, tracing)
    try {
      expect((await raw(exported, "GET", "/healthz")).status).toBe(200)
    } finally {
      // Shutting down flushes the batch processor and the metrics reader.
      await exported.close()
      collector.close()
    }
    const traces = received.filter((r) => r.path === "/v1/traces")
    expect(traces.length).toBeGreaterThan(0)
    expect(traces[0]!.bytes).toBeGreaterThan(0)
    // The same instruments as /metrics, as OpenTelemetry metrics: the request above among them.
    const metrics = received.filter((r) => r.path === "/v1/metrics")
    expect(metrics.length).toBeGreaterThan(0)
    expect(metrics.map((r) => r.body).join("")).toContain("mtg_http_requests")
  })
})
