import { createHash } from "node:crypto"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { raw } from "../support/http.ts"

/**
 * Browser-facing hardening headers (the wire itself, so every request is `raw`): `nosniff` and `no-referrer` on every
 * answer, and on `/docs` a Content-Security-Policy that lets exactly the
 * page's own inline scripts run and no one frame it.
 */

let gw: TestGateway
beforeAll(async () => {
  gw = await startGateway()
})
afterAll(() => gw?.close())

const expectBaseline = (headers: Headers, what: string) => {
  expect(headers.get("x-content-type-options"), what).toBe("nosniff")
  expect(headers.get("referrer-policy"), what).toBe("no-referrer")
}

/** The CSP's directives by name. */
const directives = (csp: string) =>
  new Map(
    csp.split(";").map((d) => d.trim()).filter(Boolean).map((d) => {
      const [name, ...values] = d.split(/\s+/)
      return [name!, values] as const
    })
  )

describe(`response headers (${backend})`, () => {
  it("every answer, success or error, carries nosniff and no-referrer", async () => {
    const acct = await createAccount(gw)
    const answers = {
      healthz: await raw(gw, "GET", "/healthz"),
      models: await raw(gw, "GET", "/v1/models", { key: acct.model.key }),
      "401": await raw(gw, "GET", "/v1/video/tasks"),
      "404 route": await raw(gw, "GET", "/nowhere"),
      "405": await raw(gw, "DELETE", "/v1/models"),
      "openapi.json": await raw(gw, "GET", "/openapi.json")
    }
    for (const [what, reply] of Object.entries(answers)) expectBaseline(reply.headers, what)
    expect(answers["401"].status).toBe(401)
    expect(answers["405"].status).toBe(405)
  })

  it("/docs has a CSP that allows its inline scripts by hash, nothing else, and forbids framing", async () => {
    const page = await fetch(`${gw.url}/docs`)
    expect(page.status).toBe(200)
    const html = await page.text()
    expectBaseline(page.headers, "/docs")
    const csp = page.headers.get("content-security-policy")
    expect(csp).not.toBeNull()
    const policy = directives(csp!)
    expect(policy.get("default-src")).toEqual(["'none'"])
    expect(policy.get("frame-ancestors")).toEqual(["'none'"])
    expect(policy.get("base-uri")).toEqual(["'none'"])
    expect(policy.get("form-action")).toEqual(["'none'"])
    expect(policy.get("object-src")).toEqual(["'none'"])
    expect(policy.get("connect-src")).toEqual(["'self'"])

    // The scripts a browser would run: inline ones without a data type.
    const scripts = [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)]
      .filter(([, attributes]) => !/type="application\/json"/.test(attributes!))
    expect(scripts.length).toBeGreaterThan(0)
    for (const [, attributes] of scripts) expect(attributes).not.toMatch(/\bsrc=/)
    const hashes = scripts.map(([, , body]) => `'sha256-${createHash("sha256").update(body!).digest("base64")}'`)
    expect([...policy.get("script-src")!].sort()).toEqual([...new Set(hashes)].sort())
  })

  it("the CSP is only on /docs", async () => {
    expect((await raw(gw, "GET", "/healthz")).headers.get("content-security-policy")).toBeNull()
  })
})
