import { Effect, Fiber } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { Channels } from "../../src/channel/Channels.ts"
import type { ImageTaskRequest } from "../../src/client/Tasks.ts"
import { channelWorker } from "../../src/tasks/engine/ChannelWorker.ts"
import { createAccount, operator } from "../support/adminApi.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { fixtureRef } from "../support/fixtures.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { rgbPixels } from "../support/images.ts"
import { probeBytes } from "../support/media.ts"
import { removeScratch } from "../support/sandboxMedia.ts"
import { refused, taskApi } from "../support/taskApi.ts"
import { ledgerOf, query } from "../support/tasks.ts"

/**
 * A new upstream is a folder plus a channel entry (docs/architecture.md): a
 * copy of `config/` gains one `channels` entry whose adapter is a path to
 * test/fixtures/channels/echo (with its required setting and `{ env }` secret)
 * and routes one image model to it; nothing else changes.
 */

const echoConfig = () =>
  configWith("models.json", (models) => {
    models.channels.echo = {
      adapter: fixtureRef("channels/echo"),
      color: "teal",
      credentials: { token: { env: "ECHO_TOKEN" } },
      concurrency: 1
    }
    models.models["provy-image-1-fast"].channels = ["echo"]
  })

const image = (model: string, over: Partial<ImageTaskRequest> = {}): ImageTaskRequest => ({
  model,
  operation: "generation",
  input: { prompt: "a teal square" },
  output: { size: "512x512", format: "png" },
  ...over
})

let gw: TestGateway
beforeAll(async () => {
  gw = await startGateway({ ROLE: "all", CONFIG_DIR: echoConfig(), ECHO_TOKEN: "echo-secret" })
})
afterAll(async () => {
  await gw?.close()
  removeScratch()
})

describe(`a channel adapter from a fixture folder (${backend})`, () => {
  it("runs the routed model's task on its channel and finishes it with the adapter's output", async () => {
    const acct = await createAccount(gw, { name: "echo", wallet_credits: 10 })
    const caller = taskApi(gw, acct)
    const created = await caller.createImageReply(image("provy-image-1-fast", {
      output: { size: "512x512", format: "png", count: 2 },
      provider_options: { echo: { note: "hi" } }
    }))
    expect(created.status).toBe(202)
    const [row] = await query<{ channel: string }>(
      gw,
      (sql) => sql`SELECT channel FROM tasks WHERE id = ${created.task.id}`
    )
    expect(row!.channel).toBe("echo")

    const done = (await caller.waitTask("image", created.task.id)).at(-1)!
    expect(done).toMatchObject({ status: "succeeded", progress: 100, error: null })
    expect(done.result?.images).toHaveLength(2)
    for (const item of done.result!.images) {
      expect(item).toMatchObject({ format: "png", mime_type: "image/png", width: 512, height: 512 })
      const bytes = new Uint8Array(await (await fetch(item.url)).arrayBuffer())
      expect((await probeBytes(bytes)).video).toMatchObject({ codec: "png", width: 512, height: 512 })
      // The colour of the channel's own setting: the echo adapter drew it, not the sandbox.
      const [r, g, b] = (await rgbPixels(bytes)).subarray(0, 3)
      // Within the rounding of ffmpeg's colour source (drawn in YUV).
      expect(Math.max(Math.abs(r! - 0), Math.abs(g! - 128), Math.abs(b! - 128))).toBeLessThanOrEqual(4)
    }
  })

  it("accepts its provider_options namespace only on models routed to it", async () => {
    const acct = await createAccount(gw, { name: "namespaces", wallet_credits: 10 })
    const create = (request: ImageTaskRequest) => taskApi(gw, acct).createImageReply(request)
    // The sandbox model does not know the echo namespace, and the echo model not the sandbox's switch.
    await refused(
      create(image("provx-image-1", { provider_options: { echo: { note: "hi" } } })),
      400,
      "invalid_provider_options"
    )
    await refused(
      create(image("provy-image-1-fast", { provider_options: { sandbox: { outcome: "fail" } } })),
      400,
      "invalid_provider_options"
    )
    await refused(
      create(image("provy-image-1-fast", { provider_options: { echo: { note: 5 } } })),
      400,
      "invalid_provider_options"
    )
    // The sandbox model still runs on the sandbox channel beside it.
    const sandboxed = await create(image("provx-image-1", { provider_options: { sandbox: { outcome: "succeed" } } }))
    expect(sandboxed.status).toBe(202)
    const [row] = await query<{ channel: string }>(
      gw,
      (sql) => sql`SELECT channel FROM tasks WHERE id = ${sandboxed.task.id}`
    )
    expect(row!.channel).toBe("sandbox")
  })
})

describe(`a task whose channel the model no longer uses (${backend})`, () => {
  let api: TestGateway
  beforeAll(async () => {
    api = await startGateway({ CONFIG_DIR: echoConfig(), ECHO_TOKEN: "echo-secret" })
  })
  afterAll(() => api?.close())

  it("fails as the model being no longer available, with its refund", async () => {
    const acct = await createAccount(api, { name: "moved", wallet_credits: 10 })
    const reply = await taskApi(api, acct).createImageReply(image("provy-image-1-fast"))
    expect(reply.status).toBe(202)
    const created = reply.task
    // As if it was queued when the model was routed to the sandbox (ROLE=api: no worker has claimed it).
    await query(api, (sql) => sql`UPDATE tasks SET channel = 'sandbox' WHERE id = ${created.id} RETURNING id`)
    const worker = api.runtime.runFork(
      Effect.scoped(Effect.flatMap(Channels, (channels) => channelWorker("sandbox", channels.get("sandbox")!.settings)))
    )
    try {
      const done = (await taskApi(api, acct).waitTask("image", created.id)).at(-1)!
      expect(done).toMatchObject({ status: "failed", result: null })
      expect(done.error).toEqual({
        code: "image_task_failed",
        message: `Model "provy-image-1-fast" is no longer available.`,
        retryable: false
      })
      expect((await ledgerOf(api, created.id)).map((l) => l.kind)).toEqual(["charge", "refund"])
      expect((await operator(api).account(acct.id)).wallet_credits).toBe(10)
    } finally {
      await api.runtime.runPromise(Fiber.interrupt(worker))
    }
  })
})
