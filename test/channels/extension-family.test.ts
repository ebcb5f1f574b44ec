import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { fixtureRef } from "../support/fixtures.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { probeBytes } from "../support/media.ts"
import { refused } from "../support/taskApi.ts"

/**
 * A new family is a folder plus a config line (docs/architecture.md): a copy of
 * `config/` gains one `plugins` entry (a path to test/fixtures/plugins/famZ)
 * and one model entry, and nothing else changes; the model is listed, validated
 * by its own table and runs on the default sandbox channel.
 */

let gw: TestGateway
beforeAll(async () => {
  const config = configWith("models.json", (models) => {
    models.plugins.push(fixtureRef("plugins/famZ"))
    models.models["provz-famZ-1-480p"] = { price_per_second: 0.05, subscription: true }
  })
  gw = await startGateway({ ROLE: "all", CONFIG_DIR: config })
})
afterAll(() => gw?.close())

describe(`a family from a fixture folder (${backend})`, () => {
  it("is listed, refuses what its table does not allow, and finishes a task with a real video", async () => {
    const acct = await createAccount(gw, { name: "famz", wallet_credits: 10 })
    const caller = api(gw, acct)
    const models = await caller.models()
    expect(models.data.find((m) => m.id === "provz-famZ-1-480p")).toMatchObject({
      type: "video",
      family: "famZ",
      owned_by: "famZ",
      capabilities: { resolution: "480p", durations: { values: [1, 2] } },
      pricing: { unit: "second", price: 0.05 }
    })

    const base = {
      model: "provz-famZ-1-480p",
      operation: "generation",
      input: { prompt: "a paper boat" },
      output: { duration: 1 }
    } as const
    await refused(caller.createVideo({ ...base, output: { duration: 5 } }), 400, "invalid_video_duration")
    await refused(
      caller.createVideo({ ...base, provider_options: { famZ: { style: "loud" } } }),
      400,
      "invalid_provider_options"
    )

    const created = await caller.createVideoReply({
      ...base,
      provider_options: { famZ: { style: "bold" }, sandbox: { outcome: "succeed" } }
    })
    expect(created.status).toBe(202)
    const done = (await caller.waitTask("video", created.task.id)).at(-1)!
    expect(done).toMatchObject({ status: "succeeded", model: "provz-famZ-1-480p", error: null })
    const video = done.result!.videos[0]!
    expect(video).toMatchObject({ width: 854, height: 480, duration_ms: 1000 })
    const bytes = new Uint8Array(await (await fetch(video.url)).arrayBuffer())
    expect((await probeBytes(bytes)).video).toMatchObject({ codec: "h264", width: 854, height: 480 })
  })
})
