import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { randomBytes } from "node:crypto"
import { connect } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount, operator, type TestAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { alsoWith, unthrottled } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { errorOf, raw } from "../support/http.ts"
import { videoRequest } from "../support/tasks.ts"

/**
 * `POST /v1/video/tasks` is answered by a fast route beside the contract's
 * router (src/tasks/FastTaskCreate.ts). It must answer exactly what the full
 * path answers: status, headers and body, byte for byte, for a replayed
 * create and for every error, and a new task of the same shape. The fast
 * route leaves a request with a query string to the full path, so the same
 * create sent with one is the reference; the server span's
 * `gateway.fast_route` shows which path served. ROLE=api: no worker moves
 * the tasks while two answers are compared.
 */

const READ_TIMEOUT_S = 2
/** The create's path with a query, which the fast routes leave to the full path (fetch drops a bare `?`). */
const FULL_PATH = "/v1/video/tasks?path=full"
const DEPRECATED = "provx-famS-720p"
const exporter = new InMemorySpanExporter()
let gw: TestGateway
let acct: TestAccount
let poor: TestAccount

beforeAll(async () => {
  const config = alsoWith(
    alsoWith(unthrottled(), "limits.json", (limits) => {
      limits.body.read_timeout_s = READ_TIMEOUT_S
    }),
    "models.json",
    (models) => {
      models.models[DEPRECATED].deprecated = { since: "2026-09-01", sunset: "2099-01-01" }
    }
  )
  gw = await startGateway(
    { ROLE: "api", CONFIG_DIR: config },
    NodeSdk.layer(() => ({
      resource: { serviceName: "fast-create-test" },
      spanProcessor: new SimpleSpanProcessor(exporter)
    }))
  )
  acct = await createAccount(gw, { name: "creator", wallet_credits: 100 })
  poor = await createAccount(gw, { name: "poor", wallet_credits: 0 })
}, 120_000)
afterAll(() => gw?.close())

interface Exact {
  readonly status: number
  readonly headers: Record<string, string>
  readonly body: string
}

/** The server span of the trace `traceId`, once the exporter has it (a span is exported as it ends). */
const serverSpanOf = async (traceId: string) => {
  for (let waited = 0; waited < 2_000; waited += 10) {
    const found = exporter.getFinishedSpans().find((s) =>
      s.kind === 1 /* SERVER */ && s.spanContext().traceId === traceId
    )
    if (found !== undefined) return found
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`no server span in trace ${traceId}`)
}

/**
 * One create as it came back: status, headers but Date, the body's exact
 * text, and whether the fast route served it (sent in a trace of its own,
 * whose server span says which path it took).
 */
const exactPost = async (path: string, headers: Record<string, string>, body: BodyInit) => {
  const traceId = randomBytes(16).toString("hex")
  const traceparent = `00-${traceId}-${randomBytes(8).toString("hex")}-01`
  const res = await fetch(gw.url + path, { method: "POST", headers: { ...headers, traceparent }, body })
  const kept = [...(res.headers as unknown as Iterable<[string, string]>)].filter(([name]) => name !== "date")
  const answer: Exact = { status: res.status, headers: Object.fromEntries(kept), body: await res.text() }
  const server = await serverSpanOf(traceId)
  return { answer, fast: server.attributes["gateway.fast_route"] === true }
}

const jsonHeaders = (key: string | undefined, extra: Record<string, string> = {}) => ({
  "content-type": "application/json",
  "x-request-id": "req_fast_create",
  ...(key === undefined ? {} : { authorization: `Bearer ${key}` }),
  ...extra
})

/** The same create on the fast route and on the full path. */
const both = async (headers: Record<string, string>, body: BodyInit) => {
  const fast = await exactPost("/v1/video/tasks", headers, body)
  const full = await exactPost(FULL_PATH, headers, body)
  expect(fast.fast, "the fast route served the first").toBe(true)
  expect(full.fast, "the full path served the second").toBe(false)
  return { fast: fast.answer, full: full.answer }
}

/** The account's balance and task count, to show what was created or charged. */
const footprint = async (account: TestAccount) => ({
  wallet: (await operator(gw).account(account.id)).wallet_credits,
  tasks: (await api(gw, account).listVideos({ limit: 100 })).data.length
})

/** A task's answer with what differs between two creates (its id and times) taken out. */
const shapeOf = (answer: Exact) => {
  const task = JSON.parse(answer.body) as Record<string, unknown>
  expect(answer.headers.location).toBe(`/v1/video/tasks/${task.id as string}`)
  // Its times (created_at, updated_at, …) can fall in different seconds for two creates.
  const rest = Object.fromEntries(Object.entries(task).filter(([name]) => name !== "id" && !name.endsWith("_at")))
  const { location: _location, ...headers } = answer.headers
  return { status: answer.status, headers, fields: Object.keys(task).sort(), task: rest }
}

describe(`fast video creates (${backend})`, () => {
  it("a new create answers what the full path answers: status, headers and the task, but its id and times", async () => {
    const headers = jsonHeaders(acct.model.key, { "cancel-after": "10m" })
    const body = JSON.stringify(videoRequest({ metadata: { order: "7" }, client_reference_id: "ref-7" }))
    const { fast, full } = await both(headers, body)
    expect(fast.status).toBe(202)
    expect(shapeOf(fast)).toEqual(shapeOf(full))
    // The task the fast route answered is the one it stored.
    const id = (JSON.parse(fast.body) as { id: string }).id
    const stored = await raw(gw, "GET", `/v1/video/tasks/${id}`, { key: acct.resource.key })
    expect(stored.body).toEqual(JSON.parse(fast.body))
  })

  it("a replayed create is answered byte for byte as the full path answers it", async () => {
    const headers = jsonHeaders(acct.model.key, { "idempotency-key": "fast-create-replay" })
    const body = JSON.stringify(videoRequest())
    const original = await exactPost("/v1/video/tasks", headers, body)
    expect(original.answer.status).toBe(202)
    expect(original.answer.headers["idempotent-replayed"]).toBeUndefined()
    const { fast, full } = await both(headers, body)
    expect(fast.headers["idempotent-replayed"]).toBe("true")
    expect(fast).toEqual(full)
    expect(JSON.parse(fast.body)).toEqual(JSON.parse(original.answer.body))
  })

  it("a deprecated model's create carries the same Deprecation and Sunset headers", async () => {
    const body = JSON.stringify(videoRequest({ model: DEPRECATED }))
    const { fast, full } = await both(jsonHeaders(acct.model.key), body)
    expect(fast.status).toBe(202)
    expect(fast.headers.deprecation).toBe(`@${Date.parse("2026-09-01") / 1000}`)
    expect(shapeOf(fast)).toEqual(shapeOf(full))
  })

  const refusals: Array<[string, () => Record<string, string>, BodyInit, number]> = [
    ["no key", () => jsonHeaders(undefined), JSON.stringify(videoRequest()), 401],
    ["an unknown key", () => jsonHeaders("sk-nosuchkey0123456789"), JSON.stringify(videoRequest()), 401],
    ["a resource key", () => jsonHeaders(acct.resource.key), JSON.stringify(videoRequest()), 403],
    [
      "an Idempotency-Key too long",
      () => jsonHeaders(acct.model.key, { "idempotency-key": "k".repeat(129) }),
      JSON.stringify(videoRequest()),
      400
    ],
    ["a Cancel-After too short", () => jsonHeaders(acct.model.key, { "cancel-after": "5s" }), "{}", 400],
    ["a body that is not JSON", () => jsonHeaders(acct.model.key), "{\"model\":", 400],
    ["a body that is not UTF-8", () => jsonHeaders(acct.model.key), new Uint8Array([0x7b, 0xff, 0x7d]), 400],
    [
      "text the database cannot store",
      () => jsonHeaders(acct.model.key),
      JSON.stringify(videoRequest({ input: { prompt: "a\u0000b" } })),
      400
    ],
    ["a JSON array", () => jsonHeaders(acct.model.key), "[]", 400],
    [
      "an unknown model",
      () => jsonHeaders(acct.model.key),
      JSON.stringify(videoRequest({ model: "no-such-model" })),
      400
    ],
    [
      "no duration",
      () => jsonHeaders(acct.model.key),
      JSON.stringify({ ...videoRequest(), output: {} }),
      400
    ],
    ["a balance too low", () => jsonHeaders(poor.model.key), JSON.stringify(videoRequest()), 402]
  ]

  it.each(refusals)(
    "%s: the same error as the full path, and nothing created or charged",
    async (_, headers, body, status) => {
      const before = [await footprint(acct), await footprint(poor)]
      const { fast, full } = await both(headers(), body)
      expect(fast.status).toBe(status)
      expect(fast).toEqual(full)
      expect([await footprint(acct), await footprint(poor)]).toEqual(before)
    }
  )

  it("an Idempotency-Key used with another body is the same 409 on both paths", async () => {
    const headers = jsonHeaders(acct.model.key, { "idempotency-key": "fast-create-conflict" })
    expect((await exactPost("/v1/video/tasks", headers, JSON.stringify(videoRequest()))).answer.status).toBe(202)
    const other = JSON.stringify(videoRequest({ input: { prompt: "another prompt" } }))
    const { fast, full } = await both(headers, other)
    expect(fast.status).toBe(409)
    expect(fast).toEqual(full)
  })
})

/** A request written on a socket by hand; resolves with the status and body, and whether the server closed. */
const onSocket = (head: ReadonlyArray<string>, body: string, { keepOpen = false } = {}) =>
  new Promise<{ status: number; body: string }>((resolve, reject) => {
    const url = new URL(gw.url)
    const socket = connect(Number(url.port), url.hostname)
    let received = ""
    socket.setEncoding("latin1")
    socket.on("data", (chunk) => (received += chunk))
    socket.on("error", reject)
    socket.on("close", () => {
      const status = Number(received.split(" ")[1])
      if (!Number.isInteger(status)) return reject(new Error(`no HTTP answer: ${JSON.stringify(received)}`))
      resolve({ status, body: received.slice(received.indexOf("\r\n\r\n") + 4) })
    })
    socket.setTimeout(15_000, () => socket.destroy(new Error("no answer within 15 s")))
    socket.write([...head, "Host: 127.0.0.1", ...(keepOpen ? [] : ["Connection: close"]), "", ""].join("\r\n"))
    socket.write(body)
  })

describe(`what the fast create leaves to the full path, and its bounds (${backend})`, () => {
  it("another content type, a chunked body and a declared length over the limit are the full path's", async () => {
    const body = JSON.stringify(videoRequest())
    const text = await exactPost(
      "/v1/video/tasks",
      { ...jsonHeaders(acct.model.key), "content-type": "text/plain" },
      body
    )
    expect(text.fast).toBe(false)
    expect(text.answer.status).toBe(415)

    const traceId = randomBytes(16).toString("hex")
    const chunked = await onSocket([
      "POST /v1/video/tasks HTTP/1.1",
      `traceparent: 00-${traceId}-${randomBytes(8).toString("hex")}-01`,
      `Authorization: Bearer ${acct.model.key}`,
      "Content-Type: application/json",
      "Transfer-Encoding: chunked"
    ], `${Buffer.byteLength(body).toString(16)}\r\n${body}\r\n0\r\n\r\n`)
    expect(chunked.status).toBe(202)
    expect((await serverSpanOf(traceId)).attributes["gateway.fast_route"]).toBeUndefined()

    const over = await onSocket([
      "POST /v1/video/tasks HTTP/1.1",
      `Authorization: Bearer ${acct.model.key}`,
      "Content-Type: application/json",
      "Content-Length: 100000000"
    ], "")
    expect(over.status).toBe(413)
    expect(errorOf(JSON.parse(over.body) as unknown)?.code).toBe("request_too_large")
  })

  it("a body that stalls ends with 408 at the read deadline and closes the connection; nothing is created", async () => {
    const before = await footprint(acct)
    const traceId = randomBytes(16).toString("hex")
    const started = Date.now()
    const stalled = await onSocket(
      [
        "POST /v1/video/tasks HTTP/1.1",
        `traceparent: 00-${traceId}-${randomBytes(8).toString("hex")}-01`,
        `Authorization: Bearer ${acct.model.key}`,
        "Content-Type: application/json",
        "Content-Length: 500"
      ],
      "{\"model\":",
      { keepOpen: true }
    )
    expect(stalled.status).toBe(408)
    expect(errorOf(JSON.parse(stalled.body) as unknown)?.code).toBe("request_timeout")
    expect(Date.now() - started).toBeGreaterThanOrEqual(READ_TIMEOUT_S * 1000 - 100)
    expect((await serverSpanOf(traceId)).attributes["gateway.fast_route"]).toBe(true)
    expect(await footprint(acct)).toEqual(before)
  })

  it("a client that goes away mid-body leaves nothing behind, and the server goes on answering", async () => {
    const before = await footprint(acct)
    await new Promise<void>((resolve) => {
      const url = new URL(gw.url)
      const socket = connect(Number(url.port), url.hostname, () => {
        socket.write(
          [
            "POST /v1/video/tasks HTTP/1.1",
            "Host: 127.0.0.1",
            `Authorization: Bearer ${acct.model.key}`,
            "Content-Type: application/json",
            "Content-Length: 500",
            "",
            "{\"model\":"
          ].join("\r\n"),
          () => setTimeout(() => socket.destroy(), 100)
        )
      })
      socket.on("close", () => resolve())
    })
    const next = await raw(gw, "POST", "/v1/video/tasks", { key: acct.model.key, json: videoRequest() })
    expect(next.status).toBe(202)
    const after = await footprint(acct)
    expect(after.tasks).toBe(before.tasks + 1)
  })
})
