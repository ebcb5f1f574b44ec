import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createClient, GatewayError } from "../../src/client/index.ts"
import { createAccount } from "../support/adminApi.ts"
import { mtgEnv, mtgInProcess } from "../support/cli.ts"
import { unthrottled } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { query, videoRequest } from "../support/tasks.ts"

/**
 * Cancel and Cancel-After from the typed client and `mtg`, against the API
 * alone (so tasks stay queued until cancelled).
 */

let gw: TestGateway
let acct: Awaited<ReturnType<typeof createAccount>>
beforeAll(async () => {
  gw = await startGateway({ CONFIG_DIR: unthrottled() })
  acct = await createAccount(gw, { name: "canceller", wallet_credits: 1000 })
})
afterAll(() => gw?.close())

const deadlineOf = async (id: string) => {
  const [row] = await query<{ cancel_at: number | null; created_at: number }>(
    gw,
    (sql) => sql`SELECT cancel_at, created_at FROM tasks WHERE id = ${id}`
  )
  // The deadline counts from the create's millisecond; created_at is its whole second.
  return Math.floor((Number(row!.cancel_at) - Number(row!.created_at) * 1000) / 1000) * 1000
}

describe(`client and CLI cancel (${backend})`, () => {
  it("the client sends cancelAfter as Cancel-After, cancels, answers a cancelled task again, and reports 404/409 as GatewayError", async () => {
    const client = createClient({ baseUrl: gw.url, modelToken: acct.model.key, resourceKey: acct.resource.key })
    const { task } = await client.createVideoTask(videoRequest() as any, { cancelAfter: "2h" })
    expect(await deadlineOf(task.id)).toBe(7_200_000)
    const seconds = await client.createVideoTask(videoRequest() as any, { cancelAfter: 90 })
    expect(await deadlineOf(seconds.task.id)).toBe(90_000)
    const refused = await client.createVideoTask(videoRequest() as any, { cancelAfter: "3d" }).catch((e) => e)
    expect(refused).toBeInstanceOf(GatewayError)
    expect(refused).toMatchObject({ status: 400, code: "invalid_request" })

    const cancelled = await client.cancelTask("video", task.id)
    expect(cancelled).toMatchObject({ id: task.id, status: "failed", error: { code: "task_cancelled" } })
    expect(await client.cancelTask("video", task.id)).toEqual(cancelled)
    const missing = await client.cancelTask("image", task.id).catch((e) => e)
    expect(missing).toMatchObject({ status: 404, code: "task_not_found" })
    await query(
      gw,
      (sql) => sql`UPDATE tasks SET status = 'succeeded', run_state = 'done' WHERE id = ${seconds.task.id}`
    )
    const conflict = await client.cancelTask("video", seconds.task.id).catch((e) => e)
    expect(conflict).toBeInstanceOf(GatewayError)
    expect(conflict).toMatchObject({ status: 409, code: "task_not_cancellable" })
  })

  it("mtg video create --cancel-after, mtg tasks cancel (kind found by itself), a refusal exits 3 with the code", async () => {
    const env = mtgEnv(gw.url, acct)
    const created = await mtgInProcess([
      "video",
      "create",
      "--model",
      "provy-famS-2.0-480p",
      "--prompt",
      "a heron",
      "--duration",
      "4",
      "--cancel-after",
      "10m",
      "--json"
    ], env)
    expect(created.code, created.stderr).toBe(0)
    const id = JSON.parse(created.stdout).task.id
    expect(await deadlineOf(id)).toBe(600_000)

    const image = await mtgInProcess(
      ["image", "create", "--model", "provx-image-1", "--prompt", "a kite", "--cancel-after", "45s", "--json"],
      env
    )
    expect(image.code, image.stderr).toBe(0)
    const imageId = JSON.parse(image.stdout).task.id
    expect(await deadlineOf(imageId)).toBe(45_000)

    const cancelled = await mtgInProcess(["tasks", "cancel", id, "--json"], env)
    expect(cancelled.code, cancelled.stderr).toBe(0)
    expect(JSON.parse(cancelled.stdout).task).toMatchObject({ id, status: "failed", error: { code: "task_cancelled" } })
    const cancelledImage = await mtgInProcess(["tasks", "cancel", imageId, "--json"], env)
    expect(JSON.parse(cancelledImage.stdout).task).toMatchObject({ object: "image.task", status: "failed" })

    const badDeadline = await mtgInProcess([
      "video",
      "create",
      "--model",
      "provy-famS-2.0-480p",
      "--prompt",
      "p",
      "--duration",
      "4",
      "--cancel-after",
      "0"
    ], env)
    expect(badDeadline.code).toBe(3)
    expect(badDeadline.stderr).toMatch(/invalid_request: Cancel-After/)
    await query(gw, (sql) => sql`UPDATE tasks SET status = 'succeeded', run_state = 'done' WHERE id = ${id}`)
    const notCancellable = await mtgInProcess(["tasks", "cancel", id, "--kind", "video"], env)
    expect(notCancellable.code).toBe(3)
    expect(notCancellable.stderr).toMatch(
      /task_not_cancellable: The task cannot be cancelled: it has already succeeded/
    )
  })
})
