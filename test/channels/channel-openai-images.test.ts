import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ImageTaskRequest } from "../../src/client/Tasks.ts"
import { type FakeImages, startFakeImages } from "../fakes/openai-images.ts"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { alsoWith, configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { makeLeftHalfMask, makePng } from "../support/images.ts"
import { probeBytes } from "../support/media.ts"
import { ledgerOf } from "../support/tasks.ts"

/**
 * The `openai-images` adapter against a fake OpenAI Images API speaking the
 * real protocol over HTTP (docs/adapters/openai-images.md), with its faults:
 * the image model `provx-image-1` is routed to it under the upstream name
 * `gpt-image-1`; the gateway's engine runs in-process (ROLE=all).
 */

const UPSTREAM_KEY = "sk-upstream-0123456789"
let fake: FakeImages
let gw: TestGateway

beforeAll(async () => {
  fake = await startFakeImages(UPSTREAM_KEY)
  const config = configWith("models.json", (models) => {
    models.channels.openai = {
      adapter: "openai-images",
      base_url: fake.url,
      credentials: { api_key: { env: "OPENAI_IMAGES_KEY" } },
      timeouts: { submit_s: 3 }
    }
    models.models["provx-image-1"].channels = [{ channel: "openai", upstream_model: "gpt-image-1" }]
  })
  alsoWith(config, "limits.json", (limits) => {
    limits.engine = { poll_interval_ms: 200, heartbeat_s: 1, lease_s: 10, retry_base_ms: 50, generate_retries: 2 }
    for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.burst = rate.per_second = 10_000
  })
  gw = await startGateway({ ROLE: "all", CONFIG_DIR: config, OPENAI_IMAGES_KEY: UPSTREAM_KEY })
})
afterAll(async () => {
  await gw?.close()
  await fake?.close()
})

const generation = (over: Partial<ImageTaskRequest> = {}): ImageTaskRequest => ({
  model: "provx-image-1",
  operation: "generation",
  input: { prompt: "a lighthouse at dusk" },
  output: { size: "1024x1536", format: "png", quality: "high", count: 2 },
  ...over
})

/** Creates a task, waits for its end; returns the task and the upstream requests it caused. */
const run = async (body: ImageTaskRequest) => {
  const acct = await createAccount(gw, { name: "images", wallet_credits: 10 })
  const before = fake.requests.length
  const created = await api(gw, acct).createImageReply(body)
  expect(created.status).toBe(202)
  const task = (await api(gw, acct).waitTask("image", created.task.id)).at(-1)!
  return { acct, task, upstream: fake.requests.slice(before) }
}

const expectRefunded = async (taskId: string) => {
  const ledger = await ledgerOf(gw, taskId)
  expect(ledger.map((l) => l.kind)).toEqual(["charge", "refund"])
  expect(ledger[0]!.wallet_micros + ledger[1]!.wallet_micros).toBe(0)
}

/** Nothing of the channel reaches the caller: its name, the upstream model, its words. */
const expectNothingUpstream = (task: unknown) => {
  const text = JSON.stringify(task)
  for (
    const secret of [
      "openai",
      "gpt-image",
      UPSTREAM_KEY,
      "req_fake",
      "moderation",
      "safety system",
      "127.0.0.1:" + new URL(fake.url).port
    ]
  ) {
    expect(text).not.toContain(secret)
  }
}

describe(`the openai-images channel (${backend})`, () => {
  it("maps a generation to the API and re-hosts the images it answers", async () => {
    const { task, upstream } = await run(generation())
    expect(task.status).toBe("succeeded")
    expect(upstream).toHaveLength(1)
    const [sent] = upstream
    expect(sent!.path).toBe("/v1/images/generations")
    expect(sent!.headers.authorization).toBe(`Bearer ${UPSTREAM_KEY}`)
    expect(sent!.fields).toEqual({
      model: "gpt-image-1",
      prompt: "a lighthouse at dusk",
      n: 2,
      size: "1024x1536",
      quality: "high",
      output_format: "png"
    })
    expect(task.result!.images).toHaveLength(2)
    for (const image of task.result!.images) {
      expect(image).toMatchObject({ mime_type: "image/png", format: "png", width: 1024, height: 1536 })
      // Served by the gateway's own store, never the upstream's.
      expect(new URL(image.url).origin).toBe(gw.url)
      const bytes = new Uint8Array(await (await fetch(image.url)).arrayBuffer())
      expect(bytes.byteLength).toBe(image.size_bytes)
      expect((await probeBytes(bytes)).video).toMatchObject({ width: 1024, height: 1536 })
    }
    expectNothingUpstream(task)
  })

  it("sends an edit as multipart with its image and mask", async () => {
    const [photo, mask] = [await makePng(512, 512), await makeLeftHalfMask(512, 512)]
    const acct = await createAccount(gw, { name: "edits", wallet_credits: 10 })
    const form = new FormData()
    for (
      const [k, v] of Object.entries({
        model: "provx-image-1",
        operation: "edit",
        prompt: "add a hat",
        size: "512x512",
        output_format: "webp"
      })
    ) {
      form.append(k, v)
    }
    form.append("image", new Blob([photo.slice()]), "photo.png")
    form.append("mask", new Blob([mask.slice()]), "mask.png")
    const before = fake.requests.length
    const created = await api(gw, acct).createImageReply(form)
    expect(created.status).toBe(202)
    const task = (await api(gw, acct).waitTask("image", created.task.id)).at(-1)!
    expect(task.error ?? null).toBe(null)
    expect(task.status).toBe("succeeded")
    const [sent] = fake.requests.slice(before)
    expect(sent!.path).toBe("/v1/images/edits")
    expect(sent!.fields).toMatchObject({
      model: "gpt-image-1",
      prompt: "add a hat",
      n: "1",
      size: "512x512",
      output_format: "webp"
    })
    expect(sent!.files.image).toEqual([photo])
    expect(sent!.files.mask).toEqual([mask])
    expect(task.result!.images[0]).toMatchObject({ mime_type: "image/webp", format: "webp", width: 512, height: 512 })
  })

  it("waits as long as a 429 asks, retries 5xx pages, and succeeds", async () => {
    fake.faults.push({ kind: "rate_limited", retryAfter: "1" }, { kind: "html", status: 502 })
    const { task, upstream } = await run(generation({ output: { size: "512x512", count: 1 } }))
    expect(task.status).toBe("succeeded")
    expect(upstream).toHaveLength(3)
    // Retry-After: 1 is honoured although the engine's own backoff starts at 50 ms.
    expect(upstream[1]!.at - upstream[0]!.at).toBeGreaterThanOrEqual(950)
    expect(upstream[2]!.at - upstream[1]!.at).toBeLessThan(950)
  })

  it("a content-policy refusal fails at once, not retryable, refunded, in the gateway's words", async () => {
    fake.faults.push({ kind: "moderation", stage: "input" })
    const { task, upstream } = await run(generation())
    expect(upstream).toHaveLength(1)
    expect(task.status).toBe("failed")
    expect(task.error).toMatchObject({ code: "image_task_failed", retryable: false })
    expectNothingUpstream(task)
    await expectRefunded(task.id)
  })

  it("an answer that never comes, or a connection dropped after sending, is not sent again: 524, refunded", async () => {
    for (const fault of [{ kind: "hang" }, { kind: "reset" }] as const) {
      fake.faults.push(fault)
      const { task, upstream } = await run(generation({ output: { size: "512x512", count: 1 } }))
      expect(upstream).toHaveLength(1)
      expect(task.status).toBe("failed")
      expect(task.error).toEqual({ code: "524", message: expect.any(String), retryable: true })
      await expectRefunded(task.id)
    }
  })

  it("base64 cut short is caught by the result inspection and asked again; always cut short is 524", async () => {
    fake.faults.push({ kind: "truncated" })
    const healed = await run(generation({ output: { size: "512x512", count: 1 } }))
    expect(healed.task.status).toBe("succeeded")
    expect(healed.upstream).toHaveLength(2)

    fake.faults.push({ kind: "truncated" }, { kind: "truncated" }, { kind: "truncated" })
    const broken = await run(generation({ output: { size: "512x512", count: 1 } }))
    expect(broken.upstream).toHaveLength(3)
    expect(broken.task).toMatchObject({ status: "failed", error: { code: "524", retryable: true } })
    await expectRefunded(broken.task.id)
  })
})
