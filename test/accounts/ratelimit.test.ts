import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { expectError, raw } from "../support/http.ts"

let gw: TestGateway
beforeAll(async () => {
  // A tiny read budget: 3 at once, then one every 10 s.
  const dir = configWith("limits.json", (limits) => (limits.rate_limits.read = { per_second: 0.1, burst: 3 }))
  gw = await startGateway({ CONFIG_DIR: dir })
})
afterAll(() => gw?.close())

describe(`rate limits (${backend})`, () => {
  it("429 rate_limit_exceeded with Retry-After once a key's burst is spent, per key", async () => {
    const a = await createAccount(gw, { name: "a" })
    const b = await createAccount(gw, { name: "b" })
    const path = "/v1/video/tasks/task_none"
    for (let i = 0; i < 3; i++) expect((await raw(gw, "GET", path, { key: a.resource.key })).status).toBe(404)
    const limited = await raw(gw, "GET", path, { key: a.resource.key })
    expectError(limited, 429, "rate_limit_exceeded", "rate_limit_error")
    const retryAfter = Number(limited.headers.get("retry-after"))
    expect(retryAfter).toBeGreaterThanOrEqual(1)
    expect(retryAfter).toBeLessThanOrEqual(10)
    // Another key, and another class of endpoint of the same account, keep their own budget.
    expect((await raw(gw, "GET", path, { key: b.resource.key })).status).toBe(404)
    expect((await raw(gw, "POST", "/v1/video/tasks", { key: a.model.key, json: {} })).status).toBe(400)
  })
})
