import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ImageTask } from "../../src/tasks/Task.ts"
import { createAccount, operator, type TestAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { errorOf, expectError, raw } from "../support/http.ts"
import { columns, makeLeftHalfMask, makePng, rgbPixels } from "../support/images.ts"
import { probeBytes } from "../support/media.ts"
import { meanAbsDiff, removeScratch } from "../support/sandboxMedia.ts"
import { ledgerOf } from "../support/tasks.ts"

/**
 * Image tasks end to end on the engine (ROLE=all): both request forms, the
 * sandbox's real images decoded by the test's own ffmpeg, edits checked
 * pixel by pixel inside and outside the mask, and the 524 path.
 */

let gw: TestGateway
let source: Server
let sourceUrl: string
let png: Uint8Array

beforeAll(async () => {
  const config = configWith("limits.json", (limits) => {
    limits.engine = { poll_interval_ms: 200, heartbeat_s: 1, lease_s: 10, retry_base_ms: 50 }
    for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.burst = rate.per_second = 10_000
  })
  gw = await startGateway({ ROLE: "all", CONFIG_DIR: config })
  png = await makePng(512, 512)
  // An image the JSON form names by URL (private targets are allowed in tests).
  source = createServer((req, res) => {
    if (req.url === "/pattern.png") res.writeHead(200, { "content-type": "image/png" }).end(png)
    else res.writeHead(404).end()
  })
  await new Promise<void>((r) => source.listen(0, "127.0.0.1", r))
  sourceUrl = `http://127.0.0.1:${(source.address() as AddressInfo).port}`
})
afterAll(async () => {
  await gw?.close()
  source?.close()
  removeScratch()
})

/** The task once it ended. */
const poll = async (acct: TestAccount, id: string) => (await api(gw, acct).waitTask("image", id)).at(-1)!

/** A create sent as it is, for what the gateway must refuse (its error body on the wire is the point). */
const refused = (key: string, request: { json?: unknown; body?: FormData; headers?: Record<string, string> }) =>
  raw(gw, "POST", "/v1/image/tasks", { key, ...request })

const multipart = (fields: Record<string, string>, files: Array<[string, Uint8Array, string]>) => {
  const form = new FormData()
  for (const [k, v] of Object.entries(fields)) form.append(k, v)
  for (const [field, bytes, name] of files) {
    form.append(field, new Blob([bytes.slice()], { type: "application/octet-stream" }), name)
  }
  return form
}

/**
 * Downloads every result image and checks it against its result item by
 * decoding the file. The item's fields are checked as the wire carries them
 * (the typed client's decoding would not show an extra one).
 */
const checkImages = async (
  acct: TestAccount,
  task: ImageTask,
  expected: { count: number; format: string; width: number; height: number }
) => {
  const images = task.result?.images ?? []
  expect(images).toHaveLength(expected.count)
  const wire = await raw(gw, "GET", `/v1/image/tasks/${task.id}`, { key: acct.resource.key })
  for (const item of (wire.body as { result: { images: Array<object> } }).result.images) {
    expect(Object.keys(item).sort()).toEqual(
      ["asset_id", "filename", "format", "height", "mime_type", "size_bytes", "url", "url_auth", "width"]
    )
  }
  const mime = { png: "image/png", jpeg: "image/jpeg", webp: "image/webp" }[expected.format]
  const codec = { png: "png", jpeg: "mjpeg", webp: "webp" }[expected.format]
  for (const item of images) {
    // The sandbox serves signed URLs: nothing but the URL is needed.
    expect(item.url_auth).toBe("none")
    const download = await fetch(item.url)
    expect(download.status).toBe(200)
    const bytes = new Uint8Array(await download.arrayBuffer())
    const probed = await probeBytes(bytes)
    expect(probed.video).toMatchObject({ codec, width: expected.width, height: expected.height })
    expect(item).toMatchObject({
      format: expected.format,
      mime_type: mime,
      width: expected.width,
      height: expected.height
    })
    expect(item.size_bytes).toBe(bytes.byteLength)
  }
  return images
}

describe(`image tasks (${backend})`, () => {
  it("generation (JSON): real images of the requested size, format and count; usage and metadata", async () => {
    const acct = await createAccount(gw, { name: "gen", wallet_credits: 10 })
    const created = await api(gw, acct).createImageReply({
      model: "provx-image-1",
      operation: "generation",
      input: { prompt: "a paper boat on a pond" },
      output: { count: 2, size: "512x512", format: "webp" },
      client_reference_id: "boat-1",
      metadata: { campaign: "spring" }
    })
    expect(created.status).toBe(202)
    expect(created.headers["location"]).toBe(`/v1/image/tasks/${created.task.id}`)
    expect(created.task).toMatchObject({
      object: "image.task",
      status: "queued",
      progress: 0,
      operation: "generation",
      result: null,
      error: null,
      usage: {},
      metadata: { campaign: "spring" },
      client_reference_id: "boat-1",
      started_at: null,
      completed_at: null
    })
    const done = await poll(acct, created.task.id)
    expect(done).toMatchObject({ status: "succeeded", progress: 100, usage: {}, metadata: { campaign: "spring" } })
    const images = await checkImages(acct, done, { count: 2, format: "webp", width: 512, height: 512 })
    expect(images[0]!.asset_id).not.toBe(images[1]!.asset_id)

    // 2 images × 0.04 credits × default group multiplier 1.
    const ledger = await ledgerOf(gw, created.task.id)
    expect(ledger.map((l) => l.kind)).toEqual(["charge"])
    expect(ledger[0]!.wallet_micros + ledger[0]!.subscription_micros).toBe(-80_000)
  })

  it("generation in each format: PNG and JPEG, model defaults applied", async () => {
    const acct = await createAccount(gw, { name: "formats", wallet_credits: 10 })
    const tasks = api(gw, acct)
    const pngTask = await tasks.createImage({
      model: "provx-image-1",
      operation: "generation",
      input: { prompt: "a kite" },
      output: { size: "1536x1024" }
    })
    const jpegTask = await tasks.createImage({
      model: "provy-image-1-fast",
      operation: "generation",
      input: { prompt: "a kite" },
      output: { size: "512x512" }
    })
    await checkImages(acct, await poll(acct, pngTask.id), {
      count: 1,
      format: "png",
      width: 1536,
      height: 1024
    })
    await checkImages(acct, await poll(acct, jpegTask.id), {
      count: 1,
      format: "jpeg",
      width: 512,
      height: 512
    })
  })

  it("edit (multipart) honours the mask: pixels under the opaque half are the input's, the rest changed", async () => {
    const acct = await createAccount(gw, { name: "edit", wallet_credits: 10 })
    const mask = await makeLeftHalfMask(512, 512)
    const reply = await api(gw, acct).createImageReply(multipart(
      {
        model: "provx-image-1",
        operation: "edit",
        prompt: "make it look like winter",
        size: "512x512",
        output_format: "png"
      },
      [["image", png, "photo.png"], ["mask", mask, "mask.png"]]
    ))
    expect(reply.status).toBe(202)
    expect(reply.task.operation).toBe("edit")
    const done = await poll(acct, reply.task.id)
    expect(done.status).toBe("succeeded")
    const [item] = await checkImages(acct, done, { count: 1, format: "png", width: 512, height: 512 })
    const before = await rgbPixels(png)
    const after = await rgbPixels(new Uint8Array(await (await fetch(item!.url)).arrayBuffer()))
    expect(columns(after, 512, 256, 512)).toEqual(columns(before, 512, 256, 512))
    expect(meanAbsDiff(columns(after, 512, 0, 256), columns(before, 512, 0, 256))).toBeGreaterThan(40)
  })

  it("edit (JSON) fetches input.images[].url; without a mask the whole image changes", async () => {
    const acct = await createAccount(gw, { name: "edit-json", wallet_credits: 10 })
    const tasks = api(gw, acct)
    const reply = await tasks.createImageReply({
      model: "provx-image-1",
      operation: "edit",
      input: { prompt: "sepia", images: [{ url: `${sourceUrl}/pattern.png` }] },
      output: { size: "512x512", format: "png" }
    })
    expect(reply.status).toBe(202)
    const done = await poll(acct, reply.task.id)
    const [item] = await checkImages(acct, done, { count: 1, format: "png", width: 512, height: 512 })
    const after = await rgbPixels(new Uint8Array(await (await fetch(item!.url)).arrayBuffer()))
    expect(meanAbsDiff(after, await rgbPixels(png))).toBeGreaterThan(40)

    const missing = await tasks.createImage({
      model: "provx-image-1",
      operation: "edit",
      input: { prompt: "x", images: [{ url: `${sourceUrl}/gone.png` }] }
    })
    const failed = await poll(acct, missing.id)
    expect(failed).toMatchObject({ status: "failed", error: { code: "image_task_failed", retryable: false } })
    expect(failed.error?.message).toContain("input.images[0]")
  })

  it("Idempotency-Key: the same multipart or JSON content replays the task; other content is 409", async () => {
    const acct = await createAccount(gw, { name: "idem", wallet_credits: 10 })
    const form = () =>
      multipart({ model: "provx-image-1", operation: "edit", prompt: "add a hat", size: "512x512" }, [[
        "image",
        png,
        "a.png"
      ]])
    const tasks = api(gw, acct)
    const first = await tasks.createImageReply(form(), { idempotencyKey: "img-1" })
    const again = await tasks.createImageReply(form(), { idempotencyKey: "img-1" })
    expect(first.status).toBe(202)
    expect(again.status).toBe(202)
    expect(again.task.id).toBe(first.task.id)
    expect(again.headers["idempotent-replayed"]).toBe("true")
    const other = await refused(acct.model.key, {
      body: multipart({ model: "provx-image-1", operation: "edit", prompt: "add a scarf", size: "512x512" }, [[
        "image",
        png,
        "a.png"
      ]]),
      headers: { "idempotency-key": "img-1" }
    })
    expectError(other, 409, "idempotency_key_conflict", "conflict_error")

    const json = { model: "provy-image-1-fast", operation: "generation", input: { prompt: "a lamp" } } as const
    const j1 = await tasks.createImageReply(json, { idempotencyKey: "img-2" })
    const j2 = await tasks.createImageReply(json, { idempotencyKey: "img-2" })
    expect(j2.task.id).toBe(j1.task.id)
    expect(j2.headers["idempotent-replayed"]).toBe("true")
    const j3 = await refused(acct.model.key, {
      json: { ...json, output: { count: 2 } },
      headers: { "idempotency-key": "img-2" }
    })
    expectError(j3, 409, "idempotency_key_conflict")
    expect((await ledgerOf(gw, first.task.id)).length).toBe(1)
  })

  it("an unavailable image service fails the task with 524, retryable, no internal detail, and refunds", async () => {
    const acct = await createAccount(gw, { name: "unavailable", wallet_credits: 10 })
    const reply = await api(gw, acct).createImage({
      model: "provx-image-1",
      operation: "generation",
      input: { prompt: "a storm" },
      provider_options: { sandbox: { outcome: "unavailable" } }
    })
    const done = await poll(acct, reply.id)
    expect(done).toMatchObject({ status: "failed", result: null })
    expect(done.error).toEqual({
      code: "524",
      message: "The image service is temporarily unavailable. Create a new task to try again.",
      retryable: true
    })
    const ledger = await ledgerOf(gw, reply.id)
    expect(ledger.map((l) => l.kind)).toEqual(["charge", "refund"])
    expect((await operator(gw).account(acct.id)).wallet_credits).toBe(10)
  })

  it("refuses what the model's table does not allow, with the error body and no charge", async () => {
    const acct = await createAccount(gw, { name: "invalid", wallet_credits: 10 })
    const base = { model: "provx-image-1", operation: "generation", input: { prompt: "a cat" } }
    const cases: Array<[unknown, string]> = [
      [{ ...base, model: "nope" }, "unsupported_image_model"],
      [{
        ...base,
        model: "provy-image-1-fast",
        operation: "edit",
        input: { prompt: "x", images: [{ url: "https://example.com/a.png" }] }
      }, "unsupported_image_operation"],
      [{ ...base, output: { size: "100x100" } }, "invalid_image_parameter"],
      [{ ...base, output: { quality: "ultra" } }, "invalid_image_parameter"],
      [{ ...base, output: { format: "gif" } }, "invalid_image_parameter"],
      [{ ...base, output: { count: 5 } }, "invalid_image_parameter"],
      [{ ...base, output: { count: 0 } }, "invalid_image_parameter"],
      [{ ...base, output: { count: 1.5 } }, "invalid_request"],
      [{ ...base, webhook_url: "https://example.com/hook" }, "invalid_request"],
      [{ ...base, image: "x" }, "invalid_request"],
      [{ ...base, input: { prompt: "  " } }, "invalid_request"],
      [{ ...base, operation: "edit" }, "invalid_request"],
      [{ ...base, operation: "remix" }, "invalid_request"],
      [{ ...base, input: { prompt: "x", images: [{ url: "ftp://example.com/a.png" }] } }, "invalid_request"],
      [{ ...base, input: { prompt: "x", mask: { url: "https://example.com/m.png" } } }, "invalid_image_parameter"],
      [{ ...base, provider_options: { sandbox: { outcome: "explode" } } }, "invalid_provider_options"],
      [{ ...base, provider_options: { other: {} } }, "invalid_provider_options"]
    ]
    for (const [json, code] of cases) {
      expectError(await refused(acct.model.key, { json }), 400, code)
    }
    const notImage = await refused(acct.model.key, {
      body: multipart({ model: "provx-image-1", operation: "edit", prompt: "x" }, [[
        "image",
        new TextEncoder().encode("hello"),
        "a.png"
      ]])
    })
    expectError(notImage, 400, "invalid_request")
    expect(errorOf(notImage.body)?.message).toContain("image[0]")
    const generationForm = await refused(acct.model.key, {
      body: multipart({ model: "provx-image-1", operation: "generation", prompt: "x" }, [])
    })
    expectError(generationForm, 400, "invalid_request")
    expect((await operator(gw).account(acct.id)).wallet_credits).toBe(10)
  })

  it("lists image tasks with the operation filter and answers batch queries in request order", async () => {
    const acct = await createAccount(gw, { name: "lists", wallet_credits: 10 })
    const tasks = api(gw, acct)
    const gen = await tasks.createImage({
      model: "provy-image-1-fast",
      operation: "generation",
      input: { prompt: "a cup" },
      provider_options: { sandbox: { delay_ms: 60_000 } }
    })
    const edit = await tasks.createImage(
      multipart({ model: "provx-image-1", operation: "edit", prompt: "x" }, [["image", png, "a.png"]])
    )
    const edits = await tasks.listImages({ operation: "edit" })
    expect(edits.data.map((t) => t.id)).toEqual([edit.id])
    const all = await tasks.listImages()
    expect(new Set(all.data.map((t) => t.id))).toEqual(new Set([gen.id, edit.id]))
    expectError(
      await raw(gw, "GET", "/v1/image/tasks?operation=remix", { key: acct.resource.key }),
      400,
      "invalid_request"
    )

    const batch = await tasks.queryTasks("image", [edit.id, "task_unknown", gen.id])
    expect(batch.data.map((t) => t.id)).toEqual([edit.id, gen.id])
    expect(batch.missing).toEqual(["task_unknown"])
    expect((await tasks.getImage(gen.id)).object).toBe("image.task")
  })
})
