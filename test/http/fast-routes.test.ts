import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { errorOf, raw } from "../support/http.ts"
import { videoRequest } from "../support/tasks.ts"

/**
 * `GET /v1/{video,image}/tasks/{id}` is answered by a fast route beside the
 * contract's router (src/platform/http/FastRoutes.ts). It must answer exactly
 * what the full path answers: status, headers and body, byte for byte, for
 * tasks in every state and for every error. The fast route leaves a request
 * with a query string to the full path, so the same URL with a query is the
 * reference; the server span's `gateway.fast_route` shows which path served.
 */

const exporter = new InMemorySpanExporter()
/** A query, which the fast routes leave to the full path (fetch drops a bare `?`, so it must carry a parameter). */
const FULL_PATH = "?path=full"
let gw: TestGateway
let acct: Awaited<ReturnType<typeof createAccount>>
let other: Awaited<ReturnType<typeof createAccount>>
const ids: Record<string, string> = {}

beforeAll(async () => {
  gw = await startGateway(
    { ROLE: "all" },
    NodeSdk.layer(() => ({
      resource: { serviceName: "fast-routes-test" },
      spanProcessor: new SimpleSpanProcessor(exporter)
    }))
  )
  acct = await createAccount(gw, { name: "reader", wallet_credits: 100 })
  other = await createAccount(gw, { name: "other" })
  const reader = api(gw, acct)
  ids.succeeded = (await reader.createVideo(videoRequest({ metadata: { order: "42" } }))).id
  ids.failed = (await reader.createVideo(videoRequest({ provider_options: { sandbox: { outcome: "fail" } } }))).id
  ids.running = (await reader.createVideo(videoRequest({ provider_options: { sandbox: { delay_ms: 600_000 } } }))).id
  ids.image =
    (await reader.createImage({ model: "provx-image-1", operation: "generation", input: { prompt: "a kite" } }))
      .id
  await reader.waitTask("video", ids.succeeded)
  await reader.waitTask("video", ids.failed)
  await reader.waitTask("video", ids.running, (t) => t.status === "in_progress")
  await reader.waitTask("image", ids.image)
}, 180_000)
afterAll(() => gw?.close())

/** One answer as it came: status, headers but Date, and the body's exact text. */
const exact = async (path: string, headers: Record<string, string>) => {
  const res = await fetch(gw.url + path, { headers })
  const kept = [...(res.headers as unknown as Iterable<[string, string]>)].filter(([name]) => name !== "date")
  return { status: res.status, headers: Object.fromEntries(kept), body: await res.text() }
}

/** The status of a task's exact answer. */
const statusOf = Schema.decodeUnknownSync(Schema.parseJson(Schema.Struct({ status: Schema.String })))

/** The fast route's answer and the full path's, with the same request id so they can be equal. */
const both = async (path: string, key?: string, extra: Record<string, string> = {}) => {
  const headers = { "x-request-id": "req_fast_routes", ...extra, ...(key ? { authorization: `Bearer ${key}` } : {}) }
  exporter.reset()
  const fast = await exact(path, headers)
  const served = exporter.getFinishedSpans().filter((s) => s.kind === 1 /* SERVER */)
  const full = await exact(`${path}${FULL_PATH}`, headers)
  // The reference must be the full path's: its server span is not the fast route's.
  const fullSpan = exporter.getFinishedSpans().filter((s) => s.kind === 1 /* SERVER */)[served.length]
  expect(fullSpan?.name).toBe("http.server GET")
  expect(fullSpan?.attributes["gateway.fast_route"]).toBeUndefined()
  return { fast, full, fastSpan: served[0] }
}

describe(`fast task reads (${backend})`, () => {
  it("answer every state of a task exactly as the full path does, and are served by the fast route", async () => {
    const states = new Set<string>()
    for (const [name, id] of Object.entries(ids)) {
      const kind = name === "image" ? "image" : "video"
      const { fast, fastSpan, full } = await both(`/v1/${kind}/tasks/${id}`, acct.resource.key)
      expect(fast.status, name).toBe(200)
      expect(fast, name).toEqual(full)
      expect(fastSpan?.attributes["gateway.fast_route"], name).toBe(true)
      states.add(statusOf(fast.body).status)
    }
    // The comparison covered a result, an error and a task still running.
    expect([...states].sort()).toEqual(["failed", "in_progress", "succeeded"])
    const succeeded = await api(gw, acct).getVideo(ids.succeeded!)
    expect(succeeded.result).not.toBeNull()
    expect(succeeded.metadata).toEqual({ order: "42" })
  })

  it("answer every error exactly as the full path does", async () => {
    const id = ids.succeeded!
    const cases: Array<[string, string, string | undefined, number, string]> = [
      ["no key", `/v1/video/tasks/${id}`, undefined, 401, "invalid_api_key"],
      ["unknown key", `/v1/video/tasks/${id}`, `ak_${"x".repeat(40)}`, 401, "invalid_api_key"],
      ["model key", `/v1/video/tasks/${id}`, acct.model.key, 403, "permission_denied"],
      ["another account's task", `/v1/video/tasks/${id}`, other.resource.key, 404, "task_not_found"],
      ["wrong kind", `/v1/image/tasks/${id}`, acct.resource.key, 404, "task_not_found"],
      ["unknown id", "/v1/video/tasks/task_nope", acct.resource.key, 404, "task_not_found"],
      ["impossible id, before the key", "/v1/video/tasks/%00", undefined, 404, "task_not_found"],
      ["malformed escape", "/v1/video/tasks/%E0%A4%A", acct.resource.key, 404, "task_not_found"],
      ["a long id", `/v1/video/tasks/${"a".repeat(5000)}`, acct.resource.key, 404, "task_not_found"]
    ]
    for (const [name, path, key, status, code] of cases) {
      const { fast, fastSpan, full } = await both(path, key)
      expect(fast.status, name).toBe(status)
      expect(errorOf(JSON.parse(fast.body) as unknown)?.code, name).toBe(code)
      expect(fast, name).toEqual(full)
      expect(fastSpan?.attributes["gateway.fast_route"], name).toBe(true)
    }
  })

  it("keep a plain client request id and make one otherwise, as the full path does", async () => {
    const path = `/v1/video/tasks/${ids.succeeded}`
    const kept = await exact(path, { authorization: `Bearer ${acct.resource.key}`, "x-request-id": "mine-1" })
    expect(kept.headers["x-request-id"]).toBe("mine-1")
    const made = await exact(path, {
      authorization: `Bearer ${acct.resource.key}`,
      "x-request-id": "bad id with spaces"
    })
    expect(made.headers["x-request-id"]).toMatch(/^req_[0-9A-Za-z]+$/)
  })

  it("continue the caller's trace, with the store's query (key and task in one) beneath the server span", async () => {
    exporter.reset()
    const traceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
    const reply = await raw(gw, "GET", `/v1/video/tasks/${ids.succeeded}`, {
      key: acct.resource.key,
      headers: { traceparent }
    })
    expect(reply.status).toBe(200)
    const spans = exporter.getFinishedSpans()
    const server = spans.find((s) => s.kind === 1 && s.attributes["gateway.fast_route"] === true)!
    expect(server.spanContext().traceId).toBe("4bf92f3577b34da6a3ce929d0e0e4736")
    expect(server.attributes["http.response.status_code"]).toBe(200)
    expect(JSON.stringify(server.attributes)).not.toContain(acct.resource.key)
    expect(server.attributes["api_key.id"]).toBe(acct.resource.id)
    for (const name of ["TaskStore.findWithKey"]) {
      const span = spans.find((s) => s.name === name)
      expect(span, name).toBeDefined()
      expect(span!.spanContext().traceId, name).toBe(server.spanContext().traceId)
    }
  })

  it("leave other methods and paths to the full path", async () => {
    const post = await raw(gw, "POST", `/v1/video/tasks/${ids.succeeded}`, { key: acct.resource.key })
    expect(post.status).toBe(405)
    expect(post.headers.get("allow")).toBe("GET")
    exporter.reset()
    // The typed client's read of the list: a 200 of the contract's shape, or it rejects.
    await api(gw, acct).listVideos()
    const server = exporter.getFinishedSpans().find((s) => s.kind === 1)!
    expect(server.attributes["gateway.fast_route"]).toBeUndefined()
  })
})
