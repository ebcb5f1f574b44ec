import { Schema } from "effect"
import { request } from "node:http"
import { connect } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../support/gateway.ts"
import { errorOf, expectError, raw } from "../support/http.ts"

let gw: TestGateway
beforeAll(async () => {
  // A short body timeout, so a stalled body is seen without a long wait.
  gw = await startGateway({ CONFIG_DIR: configWith("limits.json", (limits) => (limits.body.read_timeout_s = 1)) })
})
afterAll(() => gw?.close())

const LIMIT = 1024 * 1024

/** What this file reads of `/openapi.json`: its paths. */
const OpenApiPaths = Schema.Struct({ paths: Schema.Record({ key: Schema.String, value: Schema.Unknown }) })

/** A request with a streamed (chunked) body and no Content-Length. */
const chunked = (path: string, chunks: ReadonlyArray<Uint8Array>) =>
  new Promise<{ status: number; body: unknown; headers: Record<string, unknown> }>((resolve, reject) => {
    const url = new URL(gw.url + path)
    const req = request({
      host: url.hostname,
      port: url.port,
      path: url.pathname,
      method: "POST",
      headers: {
        authorization: `Bearer ${ADMIN_TOKEN}`,
        "content-type": "application/json",
        "transfer-encoding": "chunked"
      }
    }, (res) => {
      let data = ""
      res.on("data", (c) => (data += c))
      res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(data) as unknown, headers: res.headers }))
    })
    req.on("error", reject)
    for (const c of chunks) req.write(c)
    req.end()
  })

describe(`malformed requests (${backend})`, () => {
  const auth = { key: ADMIN_TOKEN }

  it("unknown route → 404 not_found", async () => {
    expectError(await raw(gw, "GET", "/v1/nothing/here"), 404, "not_found", "not_found_error")
    expectError(await raw(gw, "POST", "/"), 404, "not_found")
  })

  it("wrong method → 405 method_not_allowed with Allow", async () => {
    const reply = await raw(gw, "DELETE", "/v1/video/tasks/task_1", auth)
    expectError(reply, 405, "method_not_allowed", "invalid_request_error")
    expect(reply.headers.get("allow")).toBe("GET")
    const post = await raw(gw, "PUT", "/v1/video/tasks")
    expectError(post, 405, "method_not_allowed")
    expect(post.headers.get("allow")).toBe("GET, POST")
  })

  it("bad JSON → 400 invalid_request", async () => {
    for (const body of ["{", "{\"name\": }", "", "\u0000", "[1,2"]) {
      const reply = await raw(gw, "POST", "/admin/v1/accounts", {
        ...auth,
        body,
        headers: { "content-type": "application/json" }
      })
      expectError(reply, 400, "invalid_request", "invalid_request_error")
    }
    const notUtf8 = await raw(gw, "POST", "/admin/v1/accounts", {
      ...auth,
      body: new Uint8Array([0x7b, 0xff, 0xfe, 0x7d]),
      headers: { "content-type": "application/json" }
    })
    expectError(notUtf8, 400, "invalid_request")
  })

  it("JSON of the wrong shape or with unknown fields → 400 naming the field", async () => {
    const unknown = await raw(gw, "POST", "/admin/v1/accounts", { ...auth, json: { name: "x", colour: "red" } })
    expectError(unknown, 400, "invalid_request")
    expect(errorOf(unknown.body)?.message).toContain("colour")
    const wrongType = await raw(gw, "POST", "/admin/v1/accounts", { ...auth, json: { name: 5 } })
    expectError(wrongType, 400, "invalid_request")
    expect(errorOf(wrongType.body)?.message).toContain("name")
    expectError(await raw(gw, "POST", "/admin/v1/accounts", { ...auth, json: [1] }), 400, "invalid_request")
  })

  it("wrong Content-Type → 415 unsupported_media_type", async () => {
    for (const type of ["text/plain", "application/x-www-form-urlencoded", "application/jsonx"]) {
      const reply = await raw(gw, "POST", "/admin/v1/accounts", {
        ...auth,
        body: JSON.stringify({ name: "x" }),
        headers: { "content-type": type }
      })
      expectError(reply, 415, "unsupported_media_type", "invalid_request_error")
    }
    const missing = await raw(gw, "POST", "/admin/v1/accounts", { ...auth, body: JSON.stringify({ name: "x" }) })
    expectError(missing, 415, "unsupported_media_type")
    const charset = await raw(gw, "POST", "/admin/v1/accounts", {
      ...auth,
      json: { name: "x" },
      headers: { "content-type": "application/json; charset=utf-8" }
    })
    expect(charset.status).toBe(201)
  })

  it("a body over the limit → 413 with the spec's body (declared length)", async () => {
    const big = JSON.stringify({ name: "x".repeat(LIMIT) })
    const reply = await raw(gw, "POST", "/admin/v1/accounts", {
      ...auth,
      body: big,
      headers: { "content-type": "application/json" }
    })
    expectError(reply, 413, "request_too_large", "invalid_request_error")
  })

  it("a body over the limit → 413 (chunked, no declared length)", async () => {
    const chunk = new TextEncoder().encode("x".repeat(64 * 1024))
    const reply = await chunked("/admin/v1/accounts", Array.from({ length: 20 }, () => chunk))
    expect(reply.status).toBe(413)
    expect(errorOf(reply.body)?.code).toBe("request_too_large")
    expect(errorOf(reply.body)?.request_id).toBe(reply.headers["x-request-id"])
  })

  it("a body at the limit is read", async () => {
    const padding = LIMIT - JSON.stringify({ name: "x" }).length
    const body = `{"name":"x"${" ".repeat(padding)}}`.slice(0, LIMIT)
    expect(new TextEncoder().encode(body).length).toBeLessThanOrEqual(LIMIT)
    const reply = await raw(gw, "POST", "/admin/v1/accounts", {
      ...auth,
      body: `{"name":"x"}${" ".repeat(LIMIT - 12)}`,
      headers: { "content-type": "application/json" }
    })
    expect(reply.status).toBe(201)
  })

  it("every response carries x-request-id; a caller's own id is kept", async () => {
    const mine = await raw(gw, "GET", "/nope", { headers: { "x-request-id": "client-req-42" } })
    expect(mine.headers.get("x-request-id")).toBe("client-req-42")
    expect(errorOf(mine.body)?.request_id).toBe("client-req-42")
    const bad = await raw(gw, "GET", "/healthz", { headers: { "x-request-id": "has spaces and ünicode" } })
    expect(bad.headers.get("x-request-id")).toMatch(/^req_[0-9A-Za-z]{22}$/)
    const ok = await raw(gw, "GET", "/healthz")
    expect(ok.status).toBe(200)
    expect(ok.headers.get("x-request-id")).toMatch(/^req_/)
  })

  it("serves health, readiness and the OpenAPI document", async () => {
    expect((await raw(gw, "GET", "/healthz")).body).toEqual({ status: "ok" })
    expect((await raw(gw, "GET", "/readyz")).body).toEqual({ status: "ok" })
    const doc = await raw(gw, "GET", "/openapi.json")
    expect(doc.status).toBe(200)
    expect(Object.keys(Schema.decodeUnknownSync(OpenApiPaths)(doc.body).paths)).toContain("/admin/v1/accounts")
  })

  it("a body that stops arriving ends the request after read_timeout_s instead of holding it open", async () => {
    const socket = connect(Number(new URL(gw.url).port), "127.0.0.1")
    await new Promise((r) => socket.once("connect", r))
    let reply = ""
    socket.on("data", (chunk) => (reply += chunk))
    const closed = new Promise((r) => socket.once("close", r))
    socket.write(
      `POST /admin/v1/accounts HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${ADMIN_TOKEN}\r\n` +
        `Content-Type: application/json\r\nContent-Length: 40\r\n\r\n{"name":`
    )
    // The 408 reaches the client that stopped sending; then the connection is closed.
    await closed
    expect(reply).toMatch(/^HTTP\/1\.1 408/)
    expect(socket.destroyed).toBe(true)
    expect(reply).not.toMatch(/^HTTP\/1\.1 201/)
  })
})
