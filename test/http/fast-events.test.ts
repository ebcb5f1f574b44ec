import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { SqlClient } from "@effect/sql"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount, type TestAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { errorOf } from "../support/http.ts"
import { openEvents } from "../support/sse.ts"
import { videoRequest } from "../support/tasks.ts"

/**
 * `GET /v1/{video,image}/tasks/{id}/events` is answered by a fast route
 * (src/tasks/FastTaskEvents.ts) whose stream the server writes itself. It
 * must answer exactly what the full path (the HttpApi stack, EventsHttp.ts)
 * answers: status, headers and bytes, for a stream and for every error. The
 * fast route leaves a request with a query string to the full path, so the
 * same URL with a query is the reference; the server span's `gateway.fast_route`
 * shows which path served.
 */

const exporter = new InMemorySpanExporter()
/** A query, which the fast routes leave to the full path (fetch drops a bare `?`, so it must carry a parameter). */
const FULL_PATH = "?path=full"
let gw: TestGateway
let acct: TestAccount
let other: TestAccount
const BOUND = 3
beforeAll(async () => {
  const config = configWith("limits.json", (limits) => {
    limits.streams_per_key = BOUND
  })
  gw = await startGateway(
    { CONFIG_DIR: config },
    NodeSdk.layer(() => ({
      resource: { serviceName: "fast-events-test" },
      spanProcessor: new SimpleSpanProcessor(exporter)
    }))
  )
  acct = await createAccount(gw, { name: "watcher", wallet_credits: 100 })
  other = await createAccount(gw, { name: "other" })
})
afterAll(() => gw?.close())

const fail = (id: string) =>
  gw.runtime.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) =>
      sql`UPDATE tasks SET status = 'failed', run_state = 'done', completed_at = 1700000000,
      error = ${JSON.stringify({ code: "generation_failed", message: "no", retryable: false })}::jsonb
      WHERE id = ${id}`)
  )

/** One answer as it came: status, headers but Date, and the body's exact text (a settled task's stream ends). */
const exact = async (path: string, headers: Record<string, string>) => {
  const res = await fetch(gw.url + path, { headers })
  const kept = [...(res.headers as unknown as Iterable<[string, string]>)].filter(([name]) => name !== "date")
  return { status: res.status, headers: Object.fromEntries(kept), body: await res.text() }
}

/** The fast route's answer and the full path's, with the same request id so they can be equal. */
const both = async (path: string, key?: string, extra: Record<string, string> = {}) => {
  const headers = { "x-request-id": "req_fast_events", ...extra, ...(key ? { authorization: `Bearer ${key}` } : {}) }
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

describe(`fast live status streams (${backend})`, () => {
  it("a settled task's stream: the same status, headers and bytes as the full path, from the fast route", async () => {
    const id = (await api(gw, acct).createVideo(videoRequest({ metadata: { order: "7" } }))).id
    await fail(id)
    const { fast, fastSpan, full } = await both(`/v1/video/tasks/${id}/events`, acct.resource.key)
    expect(fast.status).toBe(200)
    expect(fast.headers["content-type"]).toBe("text/event-stream")
    expect(fast.body).toMatch(/^: open\n\nid: \d+\nevent: task\ndata: \{.*"status":"failed".*\}\n\n$/)
    expect(fast).toEqual(full)
    expect(fastSpan?.attributes["gateway.fast_route"]).toBe(true)
    // Resumed at its current state: nothing but the opening comment, on both paths.
    const seq = /^id: (\d+)$/m.exec(fast.body)![1]!
    const resumed = await both(`/v1/video/tasks/${id}/events`, acct.resource.key, { "last-event-id": seq })
    expect(resumed.fast.body).toBe(": open\n\n")
    expect(resumed.fast).toEqual(resumed.full)
  })

  it("a running task's stream: the same headers and first event as the full path", async () => {
    const id = (await api(gw, acct).createVideo(videoRequest())).id
    const path = `/v1/video/tasks/${id}/events`
    const fast = await openEvents(gw, path, acct.resource.key, { "x-request-id": "req_fast_events" })
    const full = await openEvents(gw, `${path}${FULL_PATH}`, acct.resource.key, { "x-request-id": "req_fast_events" })
    const headers = (s: typeof fast) =>
      Object.fromEntries([...(s.headers as unknown as Iterable<[string, string]>)].filter(([name]) => name !== "date"))
    expect(headers(fast)).toEqual(headers(full))
    expect(await fast.next()).toEqual(await full.next())
    fast.close()
    full.close()
  })

  it("answer every error exactly as the full path does", async () => {
    const id = (await api(gw, acct).createVideo(videoRequest())).id
    const cases: Array<[string, string, string | undefined, number, string]> = [
      ["no key", `/v1/video/tasks/${id}/events`, undefined, 401, "invalid_api_key"],
      ["unknown key", `/v1/video/tasks/${id}/events`, `ak_${"x".repeat(40)}`, 401, "invalid_api_key"],
      ["model key", `/v1/video/tasks/${id}/events`, acct.model.key, 403, "permission_denied"],
      ["another account's task", `/v1/video/tasks/${id}/events`, other.resource.key, 404, "task_not_found"],
      ["wrong kind", `/v1/image/tasks/${id}/events`, acct.resource.key, 404, "task_not_found"],
      ["unknown id", "/v1/video/tasks/task_nope/events", acct.resource.key, 404, "task_not_found"],
      ["impossible id, before the key", "/v1/video/tasks/%00/events", undefined, 404, "task_not_found"],
      ["a long id", `/v1/video/tasks/${"a".repeat(5000)}/events`, acct.resource.key, 404, "task_not_found"]
    ]
    for (const [name, path, key, status, code] of cases) {
      const { fast, fastSpan, full } = await both(path, key)
      expect(fast.status, name).toBe(status)
      expect(errorOf(JSON.parse(fast.body) as unknown)?.code, name).toBe(code)
      expect(fast, name).toEqual(full)
      expect(fastSpan?.attributes["gateway.fast_route"], name).toBe(true)
    }
  })

  it("past the key's bound: the same 429, whichever path holds the streams", async () => {
    const id = (await api(gw, acct).createVideo(videoRequest())).id
    const path = `/v1/video/tasks/${id}/events`
    // The bound is the key's, across both paths.
    const open = [
      await openEvents(gw, path, acct.resource.key),
      await openEvents(gw, `${path}${FULL_PATH}`, acct.resource.key),
      await openEvents(gw, path, acct.resource.key)
    ]
    expect(open.map((s) => s.status)).toEqual(Array(BOUND).fill(200))
    const { fast, full } = await both(path, acct.resource.key)
    expect(fast.status).toBe(429)
    expect(errorOf(JSON.parse(fast.body) as unknown)?.code).toBe("rate_limit_exceeded")
    expect(fast.headers["retry-after"]).toBeDefined()
    expect(fast).toEqual(full)
    for (const s of open) s.close()
  })
})
