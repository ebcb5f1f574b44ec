import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { expectError, raw, rawAdmin } from "../support/http.ts"

/**
 * Key look-ups are cached per replica (src/accounts/KeyCache.ts); a task
 * read also reads the key's current state with the task
 * (TaskStore.findWithKey). Two gateways share one PostgreSQL database: a key
 * used on B (so B has it cached) and disabled through A is refused by B's
 * task read on the very next request, and by B's other endpoints once the
 * disable's notification has arrived, well before the cache's 5 s bound.
 * PGlite is one process's database, so there is no second replica to ask
 * there.
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
        expectError(await raw(b, "GET", "/v1/video/tasks/task_x", { key: resource.key }), 404, "task_not_found")
        expect((await raw(b, "GET", "/v1/video/tasks", { key: resource.key })).status).toBe(200)
      }
      expect((await rawAdmin(a, "POST", `/admin/v1/keys/${resource.id}/disable`)).status).toBe(200)
      expectError(await raw(b, "GET", "/v1/video/tasks/task_x", { key: resource.key }), 401, "invalid_api_key")
      expectError(await raw(a, "GET", "/v1/video/tasks/task_x", { key: resource.key }), 401, "invalid_api_key")
      expectError(await raw(a, "GET", "/v1/video/tasks", { key: resource.key }), 401, "invalid_api_key")
      // B's list endpoint reads its cache: refused once the NOTIFY has reached B.
      const refusedAfterMs = await msUntil(async () =>
        (await raw(b, "GET", "/v1/video/tasks", { key: resource.key })).status === 401
      )
      expect(refusedAfterMs).toBeLessThan(2_000)
    }
  })
})

/** Milliseconds until `check` holds, asking every 10 ms; Infinity after 5 s (the cache's own bound). */
const msUntil = (check: () => Promise<boolean>) => {
  const started = Date.now()
  return eventually(check, "the check holds", { deadlineMs: 5_000, intervalMs: 10 }).then(
    () => Date.now() - started,
    () => Infinity
  )
}

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
      expectError(await raw(gw, "GET", "/v1/video/tasks/task_x", { key: resource.key }), 404, "task_not_found")
      expect((await raw(gw, "GET", "/v1/video/tasks", { key: resource.key })).status).toBe(200)
    }
    expect((await rawAdmin(gw, "POST", `/admin/v1/keys/${first.resource.id}/disable`)).status).toBe(200)
    expectError(await raw(gw, "GET", "/v1/video/tasks/task_x", { key: first.resource.key }), 401, "invalid_api_key")
    expectError(await raw(gw, "GET", "/v1/video/tasks", { key: first.resource.key }), 401, "invalid_api_key")
    expectError(await raw(gw, "GET", "/v1/video/tasks/task_x", { key: second.resource.key }), 404, "task_not_found")
    expect((await raw(gw, "GET", "/v1/video/tasks", { key: second.resource.key })).status).toBe(200)
  })
})
