import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../support/gateway.ts"
import { call, expectError } from "../support/http.ts"
import { videoRequest } from "../support/tasks.ts"

/** The console's server side over plain HTTP: sessions, cookie, CSRF, and what each role may see. */
let gw: TestGateway
let acme: Awaited<ReturnType<typeof createAccount>>

beforeAll(async () => {
  gw = await startGateway()
  acme = await createAccount(gw, { name: "acme", wallet_credits: 100 })
}, 120_000)
afterAll(() => gw?.close())

const signIn = async (key: string, headers: Record<string, string> = {}) => {
  const reply = await call(gw, "POST", "/console/api/session", { json: { key }, headers })
  const cookie = (reply.headers.get("set-cookie") ?? "").split(";")[0]!
  return { reply, cookie, csrf: reply.body?.csrf_token as string }
}

describe("console sessions", () => {
  it("signs an owner in with a resource key into an HttpOnly, SameSite=Strict cookie", async () => {
    const { reply, cookie } = await signIn(acme.resource.key)
    expect(reply.status).toBe(201)
    expect(reply.body).toMatchObject({ role: "account", account: { id: acme.id } })
    const setCookie = reply.headers.get("set-cookie")!
    expect(setCookie).toMatch(/HttpOnly/i)
    expect(setCookie).toMatch(/SameSite=Strict/i)
    expect(setCookie).toMatch(/Path=\/console/)
    // Plain http here: Secure is set only when PUBLIC_BASE_URL is https.
    expect(setCookie).not.toMatch(/Secure/i)
    expect(setCookie).not.toContain(acme.resource.key)
    const session = await call(gw, "GET", "/console/api/session", { headers: { cookie } })
    expect(session.status).toBe(200)
    expect(session.body.csrf_token).toBe(reply.body.csrf_token)
  })

  it("refuses model tokens, unknown keys and no cookie", async () => {
    expect((await signIn(acme.model.key)).reply.status).toBe(403)
    expect((await signIn("ak_" + "x".repeat(32))).reply.status).toBe(401)
    expect((await call(gw, "GET", "/console/api/tasks")).status).toBe(401)
  })

  it("refuses writes without the CSRF token or from another origin", async () => {
    const { cookie, csrf } = await signIn(acme.resource.key)
    const body = { json: { url: "http://127.0.0.1:9/hook" } }
    expect((await call(gw, "PUT", "/console/api/webhook", { ...body, headers: { cookie } })).status).toBe(403)
    const foreign = { cookie, "x-csrf-token": csrf, origin: "https://evil.example" }
    expect((await call(gw, "PUT", "/console/api/webhook", { ...body, headers: foreign })).status).toBe(403)
    const ok = await call(gw, "PUT", "/console/api/webhook", { ...body, headers: { cookie, "x-csrf-token": csrf } })
    expect(ok.status).toBe(200)
    expect(ok.body.key).toMatch(/^wk-/)
  })

  it("signs out: the cookie no longer opens anything", async () => {
    const { cookie, csrf } = await signIn(acme.resource.key)
    expect((await call(gw, "DELETE", "/console/api/session", { headers: { cookie, "x-csrf-token": csrf } })).status)
      .toBe(200)
    const after = await call(gw, "GET", "/console/api/session", { headers: { cookie } })
    expect(after.body.signed_in).toBe(false)
    expect((await call(gw, "GET", "/console/api/tasks", { headers: { cookie } })).status).toBe(401)
  })
})

describe("console data", () => {
  it("lists and shows tasks; channel details only to the operator", async () => {
    const created = await call(gw, "POST", "/v1/video/tasks", { key: acme.model.key, json: videoRequest() })
    expect(created.status).toBe(202)
    const owner = await signIn(acme.resource.key)
    const list = await call(gw, "GET", "/console/api/tasks?status=queued", { headers: { cookie: owner.cookie } })
    expect(list.status).toBe(200)
    expect(list.headers.get("retry-after")).toBeTruthy()
    expect(list.body.data.map((t: any) => t.id)).toContain(created.body.id)
    const detail = await call(gw, "GET", `/console/api/tasks/${created.body.id}`, { headers: { cookie: owner.cookie } })
    expect(detail.status).toBe(200)
    expect(detail.body.ledger.map((l: any) => l.kind)).toEqual(["charge"])
    expect(detail.body.operator).toBeUndefined()
    expect(JSON.stringify(detail.body)).not.toContain("sandbox")

    const op = await signIn(ADMIN_TOKEN)
    expect(op.reply.body.role).toBe("operator")
    const headers = { cookie: op.cookie, "x-csrf-token": op.csrf }
    expect((await call(gw, "GET", "/console/api/tasks", { headers })).status).toBe(409)
    expect((await call(gw, "PUT", "/console/api/session/account", { headers, json: { account_id: acme.id } })).status)
      .toBe(200)
    const seen = await call(gw, "GET", `/console/api/tasks/${created.body.id}`, { headers })
    expect(seen.body.operator.channel).toBe("sandbox")
    const accounts = await call(gw, "GET", "/console/api/operator/accounts", { headers })
    expect(accounts.body.data.map((a: any) => a.id)).toContain(acme.id)
    expect((await call(gw, "GET", "/console/api/operator/accounts", { headers: { cookie: owner.cookie } })).status)
      .toBe(403)
  })

  it("serves the page with a strict Content-Security-Policy", async () => {
    const page = await call(gw, "GET", "/console")
    expect([200, 503]).toContain(page.status)
    const policy = page.headers.get("content-security-policy")!
    expect(policy).toContain("script-src 'self'")
    expect(policy).toContain("frame-ancestors 'none'")
    expect(policy).not.toContain("unsafe")
  })
})

describe("console errors and middleware", () => {
  it("answers an endpoint's refusal with the spec's error body and the request id", async () => {
    const { cookie } = await signIn(acme.resource.key)
    const missing = await call(gw, "GET", "/console/api/tasks/task_unknown", {
      headers: { cookie, "x-request-id": "console-test-1" }
    })
    expectError(missing, 404, "task_not_found", "not_found_error")
    expect(missing.body.error.request_id).toBe("console-test-1")
    expect(missing.headers.get("cache-control")).toBe("no-store")

    const noCookie = await call(gw, "GET", "/console/api/tasks")
    expectError(noCookie, 401, "not_signed_in", "authentication_error")
    expect(noCookie.body.error.request_id).toMatch(/\S/)

    const operator = await signIn(ADMIN_TOKEN)
    expectError(
      await call(gw, "GET", "/console/api/tasks", { headers: { cookie: operator.cookie } }),
      409,
      "no_account_selected",
      "conflict_error"
    )
    expectError(
      await call(gw, "GET", "/console/api/operator/accounts", { headers: { cookie } }),
      403,
      "operator_only",
      "permission_error"
    )
    expectError(await signIn(acme.model.key).then((r) => r.reply), 403, "resource_key_needed", "permission_error")
    expectError(await signIn("ak_" + "y".repeat(32)).then((r) => r.reply), 401, "invalid_key", "authentication_error")
    expectError(
      await call(gw, "POST", "/console/api/session", { json: { key: 1 } }),
      400,
      "invalid_request",
      "invalid_request_error"
    )
  })

  it("refuses a write without the CSRF proof in the middleware: the handler never runs", async () => {
    const { cookie, csrf } = await signIn(acme.resource.key)
    const first = "http://127.0.0.1:9/first"
    const set = (url: string, headers: Record<string, string>) =>
      call(gw, "PUT", "/console/api/webhook", { json: { url }, headers })
    expect((await set(first, { cookie, "x-csrf-token": csrf })).status).toBe(200)

    const withoutToken = await set("http://127.0.0.1:9/second", { cookie })
    expectError(withoutToken, 403, "csrf_token_invalid", "permission_error")
    // Another session's token does not fit this cookie.
    const other = await signIn(acme.resource.key)
    expectError(
      await set("http://127.0.0.1:9/second", { cookie, "x-csrf-token": other.csrf }),
      403,
      "csrf_token_invalid"
    )
    expectError(
      await set("http://127.0.0.1:9/second", { cookie, "x-csrf-token": csrf, origin: "https://evil.example" }),
      403,
      "cross_origin",
      "permission_error"
    )
    // The Origin is checked first, then the session, then the token.
    expectError(await set("http://127.0.0.1:9/second", { origin: "https://evil.example" }), 403, "cross_origin")
    expectError(await set("http://127.0.0.1:9/second", { "x-csrf-token": csrf }), 401, "not_signed_in")
    const foreignSignIn = await signIn(acme.resource.key, { origin: "https://evil.example" })
    expectError(foreignSignIn.reply, 403, "cross_origin")
    expect(foreignSignIn.reply.headers.get("set-cookie")).toBeNull()

    const webhook = await call(gw, "GET", "/console/api/webhook", { headers: { cookie } })
    expect(webhook.body).toMatchObject({ object: "webhook", url: first })
    // Reads need no token; the page's own origin passes.
    const sameOrigin = await set(first, { cookie, "x-csrf-token": csrf, origin: gw.url })
    expect(sameOrigin.status).toBe(200)
  })

  it("marks every answer no-store and clears the cookie at sign-out", async () => {
    const { cookie, csrf } = await signIn(acme.resource.key)
    const session = await call(gw, "GET", "/console/api/session", { headers: { cookie } })
    expect(session.headers.get("cache-control")).toBe("no-store")
    const out = await call(gw, "DELETE", "/console/api/session", { headers: { cookie, "x-csrf-token": csrf } })
    expect(out.body).toEqual({ object: "console.session", signed_out: true })
    expect(out.headers.get("cache-control")).toBe("no-store")
    const cleared = out.headers.get("set-cookie")!
    expect(cleared).toMatch(/^mtg_console=;/)
    expect(cleared).toMatch(/Max-Age=0/i)
    expect(cleared).toMatch(/Path=\/console/)
  })

  it("serves the console's endpoints with the contract, but leaves them out of /openapi.json", async () => {
    const wrongMethod = await call(gw, "PATCH", "/console/api/session")
    expectError(wrongMethod, 405, "method_not_allowed")
    expect(wrongMethod.headers.get("allow")).toBe("DELETE, GET, POST")
    expectError(await call(gw, "GET", "/console/api/nothing"), 404, "not_found")
    const openapi = await call(gw, "GET", "/openapi.json")
    expect(openapi.status).toBe(200)
    const paths = Object.keys(openapi.body.paths)
    expect(paths).toContain("/v1/video/tasks")
    expect(paths.filter((p) => p.startsWith("/console"))).toEqual([])
    expect(JSON.stringify(openapi.body.components?.securitySchemes ?? {})).not.toContain("mtg_console")
  })
})
