// Runs once: no database
import Replicate, { parseProgressFromLogs, validateWebhook } from "replicate"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeReplicate, startFakeReplicate } from "../fakes/replicate.ts"
import { versionOf } from "../fakes/replicateModels.ts"
import { startReceiver } from "../support/receiver.ts"

/**
 * The fake Replicate (test/fakes/replicate.ts) driven by Replicate's own
 * client (`replicate` 1.4.0): what it sends the fake takes, and what the fake
 * answers the client reads, so the fake cannot drift from the protocol the
 * adapter is tested against.
 */

const TOKEN = "r8_fake_0123456789abcdef"
let fake: FakeReplicate
let replicate: Replicate

beforeAll(async () => {
  fake = await startFakeReplicate([TOKEN])
  replicate = new Replicate({ auth: TOKEN, baseUrl: fake.url, useFileOutput: false })
})
afterAll(async () => {
  await fake?.close()
})

describe("the fake Replicate, as the official client sees it", () => {
  it("model-scoped create, wait, output: the client's request is taken and its answer read", async () => {
    const created = await replicate.predictions.create({
      model: "google/veo-3.1-fast",
      input: { prompt: "a lighthouse", duration: 4, aspect_ratio: "16:9", generate_audio: true }
    })
    expect(created).toMatchObject({ status: "starting", version: "hidden", model: "google/veo-3.1-fast" })
    expect(created.urls.get).toBe(`${fake.url}/predictions/${created.id}`)
    const done = await replicate.wait(created, { interval: 10 })
    expect(done.status).toBe("succeeded")
    const video = await fetch(done.output as string)
    expect(video.headers.get("content-type")).toBe("video/mp4")
    expect((await video.arrayBuffer()).byteLength).toBeGreaterThan(1000)
    expect(fake.requests.find((r) => r.method === "POST")!.path).toBe("/v1/models/google/veo-3.1-fast/predictions")
  })

  it("`wait`: the client's Prefer header holds the answer until the prediction has ended", async () => {
    fake.scenarios.push({ stepMs: 20 })
    const done = await replicate.predictions.create({
      model: "google/veo-3.1",
      input: { prompt: "held", duration: 4 },
      wait: 5
    })
    expect(done.status).toBe("succeeded")
    expect(fake.requests.at(-1)!.headers.prefer).toBe("wait=5")
  })

  it("version create: the client's `version` body reaches the model of that version", async () => {
    const version = versionOf("bytedance/seedance-1-pro")
    const created = await replicate.predictions.create({ version, input: { prompt: "waves", duration: 5 } })
    expect(created.version).toBe(version)
    expect(created.model).toBe("bytedance/seedance-1-pro")
    expect((await replicate.predictions.get(created.id)).status).toBe("starting")
    // Processing: the logs carry a progress bar the client's own parser reads.
    const processing = await replicate.predictions.get(created.id)
    expect(processing.status).toBe("processing")
    expect(parseProgressFromLogs(processing)).toMatchObject({ percentage: 0.5, total: 50 })
  })

  it("a 422 with invalid_fields, a 401, and a 429 the client retries", async () => {
    const bad = replicate.predictions.create({ model: "google/veo-3.1", input: { prompt: "x", duration: 5 } })
    await expect(bad).rejects.toMatchObject({ response: { status: 422 } })
    await expect(
      new Replicate({ auth: "r8_wrong", baseUrl: fake.url }).predictions.get("abc")
    ).rejects.toMatchObject({ response: { status: 401 } })
    fake.faults.create.push({ kind: "rate_limited", retryAfter: "1" })
    const after = await replicate.predictions.create({ model: "google/veo-3.1", input: { prompt: "y", duration: 8 } })
    expect(after.status).toBe("starting")
  })

  it("cancel, and an aborted prediction (which the client's wait would not treat as final)", async () => {
    fake.scenarios.push({ starting: 1000 })
    const running = await replicate.predictions.create({ model: "google/veo-3.1", input: { prompt: "z" } })
    expect((await replicate.predictions.cancel(running.id)).status).toBe("canceled")
    fake.scenarios.push({ end: "aborted", starting: 1 })
    const aborted = await replicate.predictions.create({ model: "google/veo-3.1", input: { prompt: "w" } })
    const read = await replicate.predictions.get(aborted.id)
    expect(read).toMatchObject({ status: "aborted", started_at: null })
  })

  it("webhooks: the completed prediction posted once, signed so that the client's validateWebhook accepts it", async () => {
    const receiver = await startReceiver()
    try {
      const { key } = await replicate.webhooks.default.secret.get()
      expect(key).toBe(fake.secret)
      fake.scenarios.push({ stepMs: 20 })
      const created = await replicate.predictions.create({
        model: "google/nano-banana",
        input: { prompt: "a cat", output_format: "png" },
        webhook: receiver.url,
        webhook_events_filter: ["completed"]
      })
      const [delivered] = await receiver.waitFor(1)
      expect(delivered!.json).toMatchObject({ id: created.id, status: "succeeded" })
      const headers = delivered!.headers as Record<string, string>
      const signed = {
        id: headers["webhook-id"]!,
        timestamp: headers["webhook-timestamp"]!,
        signature: headers["webhook-signature"]!,
        body: delivered!.body,
        secret: key
      }
      expect(await validateWebhook(signed)).toBe(true)
      expect(await validateWebhook({ ...signed, body: delivered!.body.replace("succeeded", "failed") })).toBe(false)
      expect(fake.webhooks.delivered.filter((d) => d.body.id === created.id)).toHaveLength(1)
    } finally {
      await receiver.close()
    }
  })
})
