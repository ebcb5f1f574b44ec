import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ImageTask } from "../../src/tasks/Task.ts"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { expectError, raw } from "../support/http.ts"

let gw: TestGateway
let a: Awaited<ReturnType<typeof createAccount>>
let b: Awaited<ReturnType<typeof createAccount>>
let webhookKey: string

beforeAll(async () => {
  gw = await startGateway()
  a = await createAccount(gw, { name: "a" })
  b = await createAccount(gw, { name: "b" })
  webhookKey = (await operator(gw).setWebhook(a.id, { url: "http://127.0.0.1:9/h" })).key
})
afterAll(() => gw?.close())

/** Writes a task row the way the task engine will, to read it back through the API. */
const insertTask = (accountId: string, kind: "video" | "image") =>
  gw.runtime.runPromise(Effect.gen(function*() {
    const sql = yield* SqlClient.SqlClient
    const id = `task_${kind}_${Math.random().toString(36).slice(2)}`
    yield* sql`
      INSERT INTO tasks (id, account_id, kind, model, operation, status, request, client_reference_id, metadata, created_at, updated_at)
      VALUES (${id}, ${accountId}, ${kind}, 'm', 'generation', 'queued', '{}'::jsonb, 'ref-1', '{"k":1}'::jsonb, 100, 100)`
    return id
  }))

describe(`authentication (${backend})`, () => {
  const readPath = "/v1/video/tasks/task_unknown"
  const createPath = "/v1/video/tasks"

  it("401 invalid_api_key for a missing, malformed or unknown key", async () => {
    const cases: Array<Record<string, string>> = [
      {},
      { authorization: "" },
      { authorization: "Basic abc" },
      { authorization: "Bearer" },
      { authorization: `Token ${a.resource.key}` },
      { authorization: "Bearer ak_doesnotexist0000000000000000000000" },
      { authorization: "Bearer sk-doesnotexist0000000000000000000000" },
      { authorization: `Bearer ${a.resource.key}x` }
    ]
    for (const headers of cases) {
      expectError(await raw(gw, "GET", readPath, { headers }), 401, "invalid_api_key", "authentication_error")
      expectError(
        await raw(gw, "POST", createPath, { headers, json: {} }),
        401,
        "invalid_api_key",
        "authentication_error"
      )
    }
  })

  it("accepts the bearer scheme in any case", async () => {
    const reply = await raw(gw, "GET", readPath, { headers: { authorization: `bearer ${a.resource.key}` } })
    expectError(reply, 404, "task_not_found")
  })

  it("403 permission_denied for a valid key of the wrong kind", async () => {
    expectError(await raw(gw, "GET", readPath, { key: a.model.key }), 403, "permission_denied", "permission_error")
    expectError(await raw(gw, "POST", createPath, { key: a.resource.key, json: {} }), 403, "permission_denied")
    expectError(await raw(gw, "GET", readPath, { key: webhookKey }), 403, "permission_denied")
    expectError(await raw(gw, "POST", createPath, { key: webhookKey, json: {} }), 403, "permission_denied")
  })

  it("the right kind passes authentication", async () => {
    expectError(await raw(gw, "GET", readPath, { key: a.resource.key }), 404, "task_not_found", "not_found_error")
    const created = await raw(gw, "POST", createPath, { key: a.model.key, json: { model: "nope" } })
    expect(created.status).toBe(400)
  })

  it("a task is visible only to its own account", async () => {
    for (const kind of ["video", "image"] as const) {
      const id = await insertTask(a.id, kind)
      const own = await api(gw, a).getTask(kind, id)
      expect(own).toMatchObject({
        id,
        object: `${kind}.task`,
        status: "queued",
        progress: 0,
        result: null,
        error: null,
        client_reference_id: "ref-1",
        metadata: { k: 1 },
        created_at: 100,
        started_at: null,
        completed_at: null,
        updated_at: 100
      })
      if (kind === "image") expect((own as ImageTask).usage).toEqual({})
      expectError(await raw(gw, "GET", `/v1/${kind}/tasks/${id}`, { key: b.resource.key }), 404, "task_not_found")
      // A video id is not an image task and the reverse.
      const other = kind === "video" ? "image" : "video"
      expectError(await raw(gw, "GET", `/v1/${other}/tasks/${id}`, { key: a.resource.key }), 404, "task_not_found")
    }
  })
})
