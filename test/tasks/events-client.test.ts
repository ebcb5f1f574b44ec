import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createClient } from "../../src/client/Promise.ts"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { mtgEnv, mtgInProcess } from "../support/cli.ts"
import { unthrottled } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { type FaultProxy, startFaultProxy } from "../support/faultProxy.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { videoRequest } from "../support/tasks.ts"

/** The typed client's watch and quote, and the CLI's --wait and --quote, against a gateway that runs no engine. */
let gw: TestGateway
let proxy: FaultProxy
beforeAll(async () => {
  gw = await startGateway({ CONFIG_DIR: unthrottled() })
  proxy = await startFaultProxy({ port: Number(new URL(gw.url).port) })
})
afterAll(async () => {
  await proxy?.close()
  await gw?.close()
})

const sql = (f: (sql: SqlClient.SqlClient) => Effect.Effect<unknown, unknown>) =>
  gw.runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, f))
const progress = (id: string, percent: number) =>
  sql((s) => s`UPDATE tasks SET status = 'in_progress', progress = ${percent} WHERE id = ${id}`)
const fail = (id: string) =>
  sql((s) =>
    s`UPDATE tasks SET status = 'failed', run_state = 'done', completed_at = 1700000000,
      error = ${JSON.stringify({ code: "generation_failed", message: "no", retryable: false })}::jsonb WHERE id = ${id}`
  )

const newTask = async () => {
  const acct = await createAccount(gw, { name: "client", wallet_credits: 100 })
  const created = await api(gw, acct).createVideo(videoRequest())
  return { acct, id: created.id }
}

describe(`typed client: watch and quote (${backend})`, () => {
  it("watch: every state once, across a dropped connection (resumed with Last-Event-ID), ending at the terminal one", async () => {
    const { acct, id } = await newTask()
    const client = createClient({
      baseUrl: `http://127.0.0.1:${proxy.port}`,
      modelToken: acct.model.key,
      resourceKey: acct.resource.key
    })
    const connections = proxy.accepted()
    const iterator = client.watch("video", id)[Symbol.asyncIterator]()
    const first = await iterator.next()
    expect(first.value).toMatchObject({ id, status: "queued" })
    proxy.cut()
    await progress(id, 40)
    const second = await iterator.next()
    expect(second.value).toMatchObject({ status: "in_progress", progress: 40 })
    expect(proxy.accepted() - connections).toBeGreaterThanOrEqual(2)
    await fail(id)
    const third = await iterator.next()
    expect(third.value).toMatchObject({ status: "failed", error: { code: "generation_failed" } })
    expect((await iterator.next()).done).toBe(true)
  })

  it("watch of another account's task rejects with task_not_found; quote answers the charge", async () => {
    const { id } = await newTask()
    const other = await createAccount(gw, { name: "other", wallet_credits: 1 })
    const client = createClient({ baseUrl: gw.url, modelToken: other.model.key, resourceKey: other.resource.key })
    await expect(client.watch("video", id)[Symbol.asyncIterator]().next()).rejects.toMatchObject({
      _tag: "GatewayError",
      status: 404,
      code: "task_not_found"
    })
    const quote = await client.quoteVideoTask(videoRequest({ output: { duration: 10 } }) as never)
    expect(quote).toMatchObject({ object: "task.quote", billing: { credits: 0.4 }, enough_balance: true })
    const image = await client.quoteImageTask({
      model: "provx-image-1",
      operation: "generation",
      input: { prompt: "a kite" },
      output: { count: 2 }
    })
    expect(image.billing).toEqual({ unit: "image", quantity: 2, unit_price: 0.04, multiplier: 1, credits: 0.08 })
  })

  it("mtg video create --quote prints the quote and creates nothing; mtg tasks watch follows the stream", async () => {
    const { acct, id } = await newTask()
    const env = mtgEnv(gw.url, acct)
    const quoted = await mtgInProcess([
      "video",
      "create",
      "--model",
      "provy-famS-2.0-480p",
      "--prompt",
      "a fox",
      "--duration",
      "5",
      "--quote",
      "--json"
    ], env)
    expect(quoted.code).toBe(0)
    expect(JSON.parse(quoted.stdout)).toMatchObject({ object: "task.quote", billing: { credits: 0.2 } })
    const listed = await api(gw, acct).listVideos()
    expect(listed.data.map((t) => t.id)).toEqual([id])
    await progress(id, 10)
    const watching = mtgInProcess(["tasks", "watch", id, "--json"], env)
    await fail(id)
    const watched = await watching
    expect(watched.code).toBe(1)
    expect(JSON.parse(watched.stdout).task).toMatchObject({ id, status: "failed" })
  })
})
