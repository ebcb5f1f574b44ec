import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { backend } from "./support/database.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { admin, call, createAccount, expectError } from "./support/http.ts"

/**
 * Key look-ups are cached per replica (src/accounts/KeyCache.ts); disabling
 * a key must still take effect at once everywhere. Two gateways share one
 * PostgreSQL database: a key used on B (so B has it cached) and disabled
 * through A is refused by B on the very next request. PGlite is one process's
 * database, so there is no second replica to ask there.
 */
describe.skipIf(backend !== "postgresql")("cached key look-ups across replicas (postgresql)", () => {
  let a: TestGateway
  let b: TestGateway
  beforeAll(async () => {
    a = await startGateway()
    b = await startGateway({ DATABASE_URL: a.databaseUrl! })
  })
  afterAll(async () => {
    await b?.close()
    await a?.close()
  })

  it("a key disabled on one replica is refused by another on the next request", async () => {
    for (let i = 0; i < 5; i++) {
      const { resource } = await createAccount(a)
      // Twice on B: the second answer comes from B's cache.
      for (let n = 0; n < 2; n++) {
        expectError(await call(b, "GET", "/v1/video/tasks/task_x", { key: resource.key }), 404, "task_not_found")
      }
      expect((await admin(a, "POST", `/admin/v1/keys/${resource.id}/disable`)).status).toBe(200)
      expectError(await call(b, "GET", "/v1/video/tasks/task_x", { key: resource.key }), 401, "invalid_api_key")
      expectError(await call(a, "GET", "/v1/video/tasks/task_x", { key: resource.key }), 401, "invalid_api_key")
    }
  })
})

describe(`cached key look-ups on one replica (${backend})`, () => {
  let gw: TestGateway
  beforeAll(async () => {
    gw = await startGateway()
  })
  afterAll(() => gw?.close())

  it("a cached key is refused right after it is disabled, and other keys keep working", async () => {
    const first = await createAccount(gw)
    const second = await createAccount(gw)
    for (const { resource } of [first, second]) {
      expectError(await call(gw, "GET", "/v1/video/tasks/task_x", { key: resource.key }), 404, "task_not_found")
    }
    expect((await admin(gw, "POST", `/admin/v1/keys/${first.resource.id}/disable`)).status).toBe(200)
    expectError(await call(gw, "GET", "/v1/video/tasks/task_x", { key: first.resource.key }), 401, "invalid_api_key")
    expectError(await call(gw, "GET", "/v1/video/tasks/task_x", { key: second.resource.key }), 404, "task_not_found")
  })
})
