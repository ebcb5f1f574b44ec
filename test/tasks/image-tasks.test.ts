import { createServer, type Server } from "node:http"
import type { AddressInfo } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { admin, call, createAccount, expectError } from "../support/http.ts"
import { columns, makeLeftHalfMask, makePng, rgbPixels } from "../support/images.ts"
import { probeBytes } from "../support/media.ts"
import { meanAbsDiff, removeScratch } from "../support/sandboxMedia.ts"
import { ledgerOf, pollTask } from "../support/tasks.ts"

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

const poll = (key: string, id: string) =>
  pollTask(gw, key, id, undefined, { deadlineMs: 90_000, kind: "image" }).then((seen) => seen.at(-1))

const getImage = async (key: string, id: string) => (await call(gw, "GET", `/v1/image/tasks/${id}`, { key })).body

const multipart = (fields: Record<string, string>, files: Array<[string, Uint8Array, string]>) => {
  const form = new FormData()
  for (const [k, v] of Object.entries(fields)) form.append(k, v)
  for (const [field, bytes, name] of files) {
    form.append(field, new Blob([bytes.slice()], { type: "application/octet-stream" }), name)
  }
  return form
}

/** Downloads every result image and checks it against its result item by decoding the file. */
const checkImages = async (task: any, expected: { count: number; format: string; width: number; height: number }) => {
  expect(task.result.images).toHaveLength(expected.count)
  const mime = { png: "image/png", jpeg: "image/jpeg", webp: "image/webp" }[expected.format]
  const codec = { png: "png", jpeg: "mjpeg", webp: "webp" }[expected.format]
  for (const item of task.result.images) {
    expect(Object.keys(item).sort()).toEqual(
      ["asset_id", "filename", "format", "height", "mime_type", "size_bytes", "url", "url_auth", "width"]
    )
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
  return task.result.images
}

describe(`image tasks (${backend})`, () => {
  it("generation (JSON): real images of the requested size, format and count; usage and metadata", async () => {
    const acct = await createAccount(gw, { name: "gen", wallet_credits: 10 })
    const created = await call(gw, "POST", "/v1/image/tasks", {
      key: acct.model.key,
      json: {
        model: "provx-image-1",
        operation: "generation",
        input: { prompt: "a paper boat on a pond" },
        output: { count: 2, size: "512x512", format: "webp" },
        client_reference_id: "boat-1",
        metadata: { campaign: "spring" }
      }
    })
    expect(created.status).toBe(202)
    expect(created.headers.get("location")).toBe(`/v1/image/tasks/${created.body.id}`)
    expect(created.body).toMatchObject({
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
    const done = await poll(acct.resource.key, created.body.id)
    expect(done).toMatchObject({ status: "succeeded", progress: 100, usage: {}, metadata: { campaign: "spring" } })
    const images = await checkImages(done, { count: 2, format: "webp", width: 512, height: 512 })
    expect(images[0].asset_id).not.toBe(images[1].asset_id)

    // 2 images × 0.04 credits × default group multiplier 1.
    const ledger = await ledgerOf(gw, created.body.id)
    expect(ledger.map((l) => l.kind)).toEqual(["charge"])
    expect(ledger[0]!.wallet_micros + ledger[0]!.subscription_micros).toBe(-80_000)
  })

  it("generation in each format: PNG and JPEG, model defaults applied", async () => {
    const acct = await createAccount(gw, { name: "formats", wallet_credits: 10 })
    const pngTask = await call(gw, "POST", "/v1/image/tasks", {
      key: acct.model.key,
      json: {
        model: "provx-image-1",
        operation: "generation",
        input: { prompt: "a kite" },
        output: { size: "1536x1024" }
      }
    })
    const jpegTask = await call(gw, "POST", "/v1/image/tasks", {
      key: acct.model.key,
      json: {
        model: "provy-image-1-fast",
        operation: "generation",
        input: { prompt: "a kite" },
        output: { size: "512x512" }
      }
    })
    await checkImages(await poll(acct.resource.key, pngTask.body.id), {
      count: 1,
      format: "png",
      width: 1536,
      height: 1024
    })
    await checkImages(await poll(acct.resource.key, jpegTask.body.id), {
      count: 1,
      format: "jpeg",
      width: 512,
      height: 512
    })
  })

  it("edit (multipart) honours the mask: pixels under the opaque half are the input's, the rest changed", async () => {
    const acct = await createAccount(gw, { name: "edit", wallet_credits: 10 })
    const mask = await makeLeftHalfMask(512, 512)
    const reply = await call(gw, "POST", "/v1/image/tasks", {
      key: acct.model.key,
      body: multipart(
        {
          model: "provx-image-1",
          operation: "edit",
          prompt: "make it look like winter",
          size: "512x512",
          output_format: "png"
        },
        [["image", png, "photo.png"], ["mask", mask, "mask.png"]]
      )
    })
    expect(reply.status).toBe(202)
    expect(reply.body.operation).toBe("edit")
    const done = await poll(acct.resource.key, reply.body.id)
    expect(done.status).toBe("succeeded")
    const [item] = await checkImages(done, { count: 1, format: "png", width: 512, height: 512 })
    const before = await rgbPixels(png)
    const after = await rgbPixels(new Uint8Array(await (await fetch(item.url)).arrayBuffer()))
    expect(columns(after, 512, 256, 512)).toEqual(columns(before, 512, 256, 512))
    expect(meanAbsDiff(columns(after, 512, 0, 256), columns(before, 512, 0, 256))).toBeGreaterThan(40)
  })

  it("edit (JSON) fetches input.images[].url; without a mask the whole image changes", async () => {
    const acct = await createAccount(gw, { name: "edit-json", wallet_credits: 10 })
    const reply = await call(gw, "POST", "/v1/image/tasks", {
      key: acct.model.key,
      json: {
        model: "provx-image-1",
        operation: "edit",
        input: { prompt: "sepia", images: [{ url: `${sourceUrl}/pattern.png` }] },
        output: { size: "512x512", format: "png" }
      }
    })
    expect(reply.status).toBe(202)
    const done = await poll(acct.resource.key, reply.body.id)
    const [item] = await checkImages(done, { count: 1, format: "png", width: 512, height: 512 })
    const after = await rgbPixels(new Uint8Array(await (await fetch(item.url)).arrayBuffer()))
    expect(meanAbsDiff(after, await rgbPixels(png))).toBeGreaterThan(40)

    const missing = await call(gw, "POST", "/v1/image/tasks", {
      key: acct.model.key,
      json: {
        model: "provx-image-1",
        operation: "edit",
        input: { prompt: "x", images: [{ url: `${sourceUrl}/gone.png` }] }
      }
    })
    const failed = await poll(acct.resource.key, missing.body.id)
    expect(failed).toMatchObject({ status: "failed", error: { code: "image_task_failed", retryable: false } })
    expect(failed.error.message).toContain("input.images[0]")
  })

  it("Idempotency-Key: the same multipart or JSON content replays the task; other content is 409", async () => {
    const acct = await createAccount(gw, { name: "idem", wallet_credits: 10 })
    const form = () =>
      multipart({ model: "provx-image-1", operation: "edit", prompt: "add a hat", size: "512x512" }, [[
        "image",
        png,
        "a.png"
      ]])
    const first = await call(gw, "POST", "/v1/image/tasks", {
      key: acct.model.key,
      body: form(),
      headers: { "idempotency-key": "img-1" }
    })
    const again = await call(gw, "POST", "/v1/image/tasks", {
      key: acct.model.key,
      body: form(),
      headers: { "idempotency-key": "img-1" }
    })
    expect(first.status).toBe(202)
    expect(again.status).toBe(202)
    expect(again.body.id).toBe(first.body.id)
    expect(again.headers.get("idempotent-replayed")).toBe("true")
    const other = await call(gw, "POST", "/v1/image/tasks", {
      key: acct.model.key,
      body: multipart({ model: "provx-image-1", operation: "edit", prompt: "add a scarf", size: "512x512" }, [[
        "image",
        png,
        "a.png"
      ]]),
      headers: { "idempotency-key": "img-1" }
    })
    expectError(other, 409, "idempotency_key_conflict", "conflict_error")

    const json = { model: "provy-image-1-fast", operation: "generation", input: { prompt: "a lamp" } }
    const j1 = await call(gw, "POST", "/v1/image/tasks", {
      key: acct.model.key,
      json,
      headers: { "idempotency-key": "img-2" }
    })
    const j2 = await call(gw, "POST", "/v1/image/tasks", {
      key: acct.model.key,
      json,
      headers: { "idempotency-key": "img-2" }
    })
    expect(j2.body.id).toBe(j1.body.id)
    expect(j2.headers.get("idempotent-replayed")).toBe("true")
    const j3 = await call(gw, "POST", "/v1/image/tasks", {
      key: acct.model.key,
      json: { ...json, output: { count: 2 } },
      headers: { "idempotency-key": "img-2" }
    })
    expectError(j3, 409, "idempotency_key_conflict")
    expect((await ledgerOf(gw, first.body.id)).length).toBe(1)
  })

  it("an unavailable image service fails the task with 524, retryable, no internal detail, and refunds", async () => {
    const acct = await createAccount(gw, { name: "unavailable", wallet_credits: 10 })
    const reply = await call(gw, "POST", "/v1/image/tasks", {
      key: acct.model.key,
      json: {
        model: "provx-image-1",
        operation: "generation",
        input: { prompt: "a storm" },
        provider_options: { sandbox: { outcome: "unavailable" } }
      }
    })
    const done = await poll(acct.resource.key, reply.body.id)
    expect(done).toMatchObject({ status: "failed", result: null })
    expect(done.error).toEqual({
      code: "524",
      message: "The image service is temporarily unavailable. Create a new task to try again.",
      retryable: true
    })
    const ledger = await ledgerOf(gw, reply.body.id)
    expect(ledger.map((l) => l.kind)).toEqual(["charge", "refund"])
    expect((await admin(gw, "GET", `/admin/v1/accounts/${acct.id}`)).body.wallet_credits).toBe(10)
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
      const reply = await call(gw, "POST", "/v1/image/tasks", { key: acct.model.key, json })
      expectError(reply, 400, code)
    }
    const notImage = await call(gw, "POST", "/v1/image/tasks", {
      key: acct.model.key,
      body: multipart({ model: "provx-image-1", operation: "edit", prompt: "x" }, [[
        "image",
        new TextEncoder().encode("hello"),
        "a.png"
      ]])
    })
    expectError(notImage, 400, "invalid_request")
    expect(notImage.body.error.message).toContain("image[0]")
    const generationForm = await call(gw, "POST", "/v1/image/tasks", {
      key: acct.model.key,
      body: multipart({ model: "provx-image-1", operation: "generation", prompt: "x" }, [])
    })
    expectError(generationForm, 400, "invalid_request")
    expect((await admin(gw, "GET", `/admin/v1/accounts/${acct.id}`)).body.wallet_credits).toBe(10)
  })

  it("lists image tasks with the operation filter and answers batch queries in request order", async () => {
    const acct = await createAccount(gw, { name: "lists", wallet_credits: 10 })
    const gen = await call(gw, "POST", "/v1/image/tasks", {
      key: acct.model.key,
      json: {
        model: "provy-image-1-fast",
        operation: "generation",
        input: { prompt: "a cup" },
        provider_options: { sandbox: { delay_ms: 60_000 } }
      }
    })
    const edit = await call(gw, "POST", "/v1/image/tasks", {
      key: acct.model.key,
      body: multipart({ model: "provx-image-1", operation: "edit", prompt: "x" }, [["image", png, "a.png"]])
    })
    const edits = await call(gw, "GET", "/v1/image/tasks?operation=edit", { key: acct.resource.key })
    expect(edits.body.data.map((t: any) => t.id)).toEqual([edit.body.id])
    const all = await call(gw, "GET", "/v1/image/tasks", { key: acct.resource.key })
    expect(new Set(all.body.data.map((t: any) => t.id))).toEqual(new Set([gen.body.id, edit.body.id]))
    expectError(
      await call(gw, "GET", "/v1/image/tasks?operation=remix", { key: acct.resource.key }),
      400,
      "invalid_request"
    )

    const batch = await call(gw, "POST", "/v1/image/tasks/query", {
      key: acct.resource.key,
      json: { task_ids: [edit.body.id, "task_unknown", gen.body.id] }
    })
    expect(batch.body.data.map((t: any) => t.id)).toEqual([edit.body.id, gen.body.id])
    expect(batch.body.missing).toEqual(["task_unknown"])
    expect((await getImage(acct.resource.key, gen.body.id)).object).toBe("image.task")
  })
})
