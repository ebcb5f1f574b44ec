import { Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { SignedIn, TaskPage } from "../../src/console/Api.ts"
import { createAccount } from "../support/adminApi.ts"
import { api, rejection } from "../support/api.ts"
import { consoleApi, consoleSignIn } from "../support/consoleApi.ts"
import { ADMIN_TOKEN, startGateway, type TestGateway } from "../support/gateway.ts"
import { errorOf, expectError, raw } from "../support/http.ts"
import { videoRequest } from "../support/tasks.ts"

/** The console's server side over plain HTTP: sessions, cookie, CSRF, and what each role may see. */
let gw: TestGateway
let acme: Awaited<ReturnType<typeof createAccount>>

beforeAll(async () => {
  gw = await startGateway()
  acme = await createAccount(gw, { name: "acme", wallet_credits: 100 })
}, 120_000)
afterAll(() => gw?.close())

/** A sign-in on the wire, for its cookie's attributes and for the sign-ins the console refuses. */
const rawSignIn = async (key: unknown, headers: Record<string, string> = {}) => {
  const reply = await raw(gw, "POST", "/console/api/session", { json: { key }, headers })
  const cookie = (reply.headers.get("set-cookie") ?? "").split(";")[0]!
  return { reply, cookie }
}

/** What this file reads of `/openapi.json`: its paths and its security schemes, kept whole. */
const OpenApiDocument = Schema.Struct({
  paths: Schema.Record({ key: Schema.String, value: Schema.Unknown }),
  components: Schema.optional(Schema.Struct({ securitySchemes: Schema.optional(Schema.Unknown) }))
})

describe("console sessions", () => {
  it("signs an owner in with a resource key into an HttpOnly, SameSite=Strict cookie", async () => {
    const { reply, cookie } = await rawSignIn(acme.resource.key)
    expect(reply.status).toBe(201)
    expect(reply.body).toMatchObject({ role: "account", account: { id: acme.id } })
    const signedIn = Schema.decodeUnknownSync(SignedIn)(reply.body)
    const setCookie = reply.headers.get("set-cookie")!
    expect(setCookie).toMatch(/HttpOnly/i)
    expect(setCookie).toMatch(/SameSite=Strict/i)
    expect(setCookie).toMatch(/Path=\/console/)
    // Plain http here: Secure is set only when PUBLIC_BASE_URL is https.
    expect(setCookie).not.toMatch(/Secure/i)
    expect(setCookie).not.toContain(acme.resource.key)
    const session = await consoleApi(gw, { cookie })((c) => c.getSession())
    expect(session).toMatchObject({ signed_in: true, csrf_token: signedIn.csrf_token })
  })

  it("refuses model tokens, unknown keys and no cookie", async () => {
    expect((await rawSignIn(acme.model.key)).reply.status).toBe(403)
    expect((await rawSignIn("ak_" + "x".repeat(32))).reply.status).toBe(401)
    expect((await raw(gw, "GET", "/console/api/tasks")).status).toBe(401)
  })

  it("refuses writes without the CSRF token or from another origin", async () => {
    const { cookie, csrf, call } = await consoleSignIn(gw, acme.resource.key)
    const url = "http://127.0.0.1:9/hook"
    const body = { json: { url } }
    expect((await raw(gw, "PUT", "/console/api/webhook", { ...body, headers: { cookie } })).status).toBe(403)
    const foreign = { cookie, "x-csrf-token": csrf, origin: "https://evil.example" }
    expect((await raw(gw, "PUT", "/console/api/webhook", { ...body, headers: foreign })).status).toBe(403)
    const ok = await call((c) => c.setWebhook({ payload: { url } }))
    expect(ok.key).toMatch(/^wk-/)
  })

  it("signs out: the cookie no longer opens anything", async () => {
    const { cookie, call } = await consoleSignIn(gw, acme.resource.key)
    const [, out] = await call((c) => c.signOut({ withResponse: true }))
    expect(out.status).toBe(200)
    const after = await consoleApi(gw, { cookie })((c) => c.getSession())
    expect(after.signed_in).toBe(false)
    expect((await raw(gw, "GET", "/console/api/tasks", { headers: { cookie } })).status).toBe(401)
  })
})

describe("console data", () => {
  it("lists and shows tasks; channel details only to the operator", async () => {
    const created = await api(gw, acme).createVideo(videoRequest())
    const owner = await consoleSignIn(gw, acme.resource.key)
    const [list, listed] = await owner.call((c) => c.listTasks({ urlParams: { status: "queued" }, withResponse: true }))
    expect(listed.status).toBe(200)
    expect(listed.headers["retry-after"]).toBeTruthy()
    expect(list.data.map((t) => t.id)).toContain(created.id)
    // On the wire: what the owner's answer holds, every field of it.
    const detail = await raw(gw, "GET", `/console/api/tasks/${created.id}`, { headers: { cookie: owner.cookie } })
    expect(detail.status).toBe(200)
    const page = Schema.decodeUnknownSync(TaskPage)(detail.body)
    expect(page.ledger.map((l) => l.kind)).toEqual(["charge"])
    expect(page.operator).toBeUndefined()
    expect(JSON.stringify(detail.body)).not.toContain("sandbox")

    const op = await consoleSignIn(gw, ADMIN_TOKEN)
    expect(op.session.role).toBe("operator")
    expect((await rejection(op.call((c) => c.listTasks({ urlParams: {} })))).status).toBe(409)
    const [, switched] = await op.call((c) => c.switchAccount({ payload: { account_id: acme.id }, withResponse: true }))
    expect(switched.status).toBe(200)
    const seen = await op.call((c) => c.getTask({ path: { id: created.id } }))
    expect(seen.operator?.channel).toBe("sandbox")
    const accounts = await op.call((c) => c.listAccounts({ urlParams: {} }))
    expect(accounts.data.map((a) => a.id)).toContain(acme.id)
    expect((await rejection(owner.call((c) => c.listAccounts({ urlParams: {} })))).status).toBe(403)
  })

  it("serves the page with a strict Content-Security-Policy", async () => {
    const page = await raw(gw, "GET", "/console")
    expect([200, 503]).toContain(page.status)
    const policy = page.headers.get("content-security-policy")!
    expect(policy).toContain("script-src 'self'")
    expect(policy).toContain("frame-ancestors 'none'")
    expect(policy).not.toContain("unsafe")
  })
})

describe("console errors and middleware", () => {
  it("answers an endpoint's refusal with the spec's error body and the request id", async () => {
    const { cookie } = await consoleSignIn(gw, acme.resource.key)
    const missing = await raw(gw, "GET", "/console/api/tasks/task_unknown", {
      headers: { cookie, "x-request-id": "console-test-1" }
    })
    expectError(missing, 404, "task_not_found", "not_found_error")
    expect(errorOf(missing.body)?.request_id).toBe("console-test-1")
    expect(missing.headers.get("cache-control")).toBe("no-store")

    const noCookie = await raw(gw, "GET", "/console/api/tasks")
    expectError(noCookie, 401, "not_signed_in", "authentication_error")
    expect(errorOf(noCookie.body)?.request_id).toMatch(/\S/)

    const operator = await consoleSignIn(gw, ADMIN_TOKEN)
    expectError(
      await raw(gw, "GET", "/console/api/tasks", { headers: { cookie: operator.cookie } }),
      409,
      "no_account_selected",
      "conflict_error"
    )
    expectError(
      await raw(gw, "GET", "/console/api/operator/accounts", { headers: { cookie } }),
      403,
      "operator_only",
      "permission_error"
    )
    expectError((await rawSignIn(acme.model.key)).reply, 403, "resource_key_needed", "permission_error")
    expectError((await rawSignIn("ak_" + "y".repeat(32))).reply, 401, "invalid_key", "authentication_error")
    expectError((await rawSignIn(1)).reply, 400, "invalid_request", "invalid_request_error")
  })

  it("refuses a write without the CSRF proof in the middleware: the handler never runs", async () => {
    const { cookie, csrf, call } = await consoleSignIn(gw, acme.resource.key)
    const first = "http://127.0.0.1:9/first"
    const set = (url: string, headers: Record<string, string>) =>
      raw(gw, "PUT", "/console/api/webhook", { json: { url }, headers })
    await call((c) => c.setWebhook({ payload: { url: first } }))

    const withoutToken = await set("http://127.0.0.1:9/second", { cookie })
    expectError(withoutToken, 403, "csrf_token_invalid", "permission_error")
    // Another session's token does not fit this cookie.
    const other = await consoleSignIn(gw, acme.resource.key)
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
    const foreignSignIn = await rawSignIn(acme.resource.key, { origin: "https://evil.example" })
    expectError(foreignSignIn.reply, 403, "cross_origin")
    expect(foreignSignIn.reply.headers.get("set-cookie")).toBeNull()

    const webhook = await call((c) => c.getWebhook())
    expect(webhook).toMatchObject({ object: "webhook", url: first })
    // Reads need no token; the page's own origin passes.
    const sameOrigin = await set(first, { cookie, "x-csrf-token": csrf, origin: gw.url })
    expect(sameOrigin.status).toBe(200)
  })

  it("marks every answer no-store and clears the cookie at sign-out", async () => {
    const { cookie, csrf, call } = await consoleSignIn(gw, acme.resource.key)
    const [, session] = await call((c) => c.getSession({ withResponse: true }))
    expect(session.headers["cache-control"]).toBe("no-store")
    // On the wire: the exact answer and the cookie that clears the session's.
    const out = await raw(gw, "DELETE", "/console/api/session", { headers: { cookie, "x-csrf-token": csrf } })
    expect(out.body).toEqual({ object: "console.session", signed_out: true })
    expect(out.headers.get("cache-control")).toBe("no-store")
    const cleared = out.headers.get("set-cookie")!
    expect(cleared).toMatch(/^mtg_console=;/)
    expect(cleared).toMatch(/Max-Age=0/i)
    expect(cleared).toMatch(/Path=\/console/)
  })

  it("serves the console's endpoints with the contract, but leaves them out of /openapi.json", async () => {
    const wrongMethod = await raw(gw, "PATCH", "/console/api/session")
    expectError(wrongMethod, 405, "method_not_allowed")
    expect(wrongMethod.headers.get("allow")).toBe("DELETE, GET, POST")
    expectError(await raw(gw, "GET", "/console/api/nothing"), 404, "not_found")
    const openapi = await raw(gw, "GET", "/openapi.json")
    expect(openapi.status).toBe(200)
    const doc = Schema.decodeUnknownSync(OpenApiDocument)(openapi.body)
    const paths = Object.keys(doc.paths)
    expect(paths).toContain("/v1/video/tasks")
    expect(paths.filter((p) => p.startsWith("/console"))).toEqual([])
    expect(JSON.stringify(doc.components?.securitySchemes ?? {})).not.toContain("mtg_console")
  })
})
