import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { api, rejection } from "../support/api.ts"
import { backends } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"

/**
 * The task endpoints through the contract's typed client, on every database
 * this run reaches (PGlite, and PostgreSQL too when DATABASE_URL is set):
 * what the server answers decodes as the contract says, errors included.
 */

let gw: TestGateway

describe.each(backends)("the task contract through its typed client (%s)", (on) => {
  beforeAll(async () => {
    gw = await startGateway({}, undefined, {}, on)
  })
  afterAll(() => gw?.close())

  it("create, get, list and batch-query answer the contract's shapes", async () => {
    const acct = await createAccount(gw, { name: "contract", wallet_credits: 10 })
    const call = api(gw, acct).client
    const payload = {
      model: "provy-famS-2.0-480p",
      operation: "generation" as const,
      input: { prompt: "a paper boat on a pond" },
      output: { duration: 4 },
      client_reference_id: "boat-1"
    }
    const [task, response] = await call((c) =>
      c.model.taskCreate.createVideoTask({ payload, headers: {}, withResponse: true })
    )
    expect(response.status).toBe(202)
    expect(response.headers.location).toBe(`/v1/video/tasks/${task.id}`)
    expect(task).toMatchObject({ object: "video.task", status: "queued", client_reference_id: "boat-1", metadata: {} })

    const got = await call((c) => c.resource.taskRead.getVideoTask({ path: { task_id: task.id } }))
    expect(got.id).toBe(task.id)

    const listed = await call((c) =>
      c.resource.taskRead.listVideoTasks({ urlParams: { client_reference_id: "boat-1" } })
    )
    expect(listed.data.map((t) => t.id)).toEqual([task.id])
    expect(listed).toMatchObject({ object: "list", has_more: false, first_id: task.id, last_id: task.id })

    const batch = await call((c) =>
      c.resource.taskRead.queryVideoTasks({ payload: { task_ids: [task.id, "task_doesnotexist"] } })
    )
    expect(batch.data.map((t) => t.id)).toEqual([task.id])
    expect(batch.missing).toEqual(["task_doesnotexist"])
  })

  it("errors arrive as the spec's body: status, type and code", async () => {
    const acct = await createAccount(gw, { name: "contract-errors", wallet_credits: 0 })
    const call = api(gw, acct).client
    const missing = await rejection(
      call((c) => c.resource.taskRead.getVideoTask({ path: { task_id: "task_nothere" } }))
    )
    expect(missing).toMatchObject({
      status: 404,
      type: "not_found_error",
      code: "task_not_found"
    })

    const wrongKey = await rejection(
      call((c) => c.model.taskRead.getVideoTask({ path: { task_id: "task_nothere" } }))
    )
    expect(wrongKey).toMatchObject({ status: 403, code: "permission_denied" })

    const broke = await rejection(call((c) =>
      c.model.taskCreate.createVideoTask({
        payload: {
          model: "provy-famS-2.0-480p",
          operation: "generation",
          input: { prompt: "x" },
          output: { duration: 4 }
        },
        headers: {}
      })
    ))
    expect(broke).toMatchObject({
      status: 402,
      type: "billing_error",
      code: "insufficient_balance"
    })
  })
})
