import { Schema } from "effect"
import { existsSync, renameSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import OpenAI, { APIError, toFile } from "openai"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ImageTask } from "../../src/tasks/Task.ts"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { errorOf, expectError, raw } from "../support/http.ts"
import { columns, makeLeftHalfMask, makePng, rgbPixels } from "../support/images.ts"
import { probeBytes } from "../support/media.ts"
import { meanAbsDiff, removeScratch, sha256 } from "../support/sandboxMedia.ts"
import { switchableFfmpeg } from "../support/switchableFfmpeg.ts"
import { eventsOf, ledgerOf, query } from "../support/tasks.ts"

/**
 * The synchronous image endpoints driven by the official `openai` client
 * (and by plain requests where a test needs the raw answer), on a gateway
 * running its engine (ROLE=all). Images are checked by decoding them with the
 * test's own ffprobe/ffmpeg. Failures come from the outside, never from a
 * request switch: a render tool that is down (`524`), a result store that
 * refuses writes (another failure). A second gateway with
 * `limits.sync_wait_s` = 1 and a held render tool shows the 202 hand-off.
 */

let gw: TestGateway
let slow: TestGateway
let tools: ReturnType<typeof switchableFfmpeg>
let slowTools: ReturnType<typeof switchableFfmpeg>
let png: Uint8Array
let mask: Uint8Array

const limitsFor = (syncWaitS?: number) =>
  configWith("limits.json", (limits) => {
    limits.engine = { poll_interval_ms: 200, heartbeat_s: 1, lease_s: 10, retry_base_ms: 50 }
    for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.burst = rate.per_second = 10_000
    if (syncWaitS !== undefined) limits.sync_wait_s = syncWaitS
  })

beforeAll(async () => {
  tools = switchableFfmpeg()
  slowTools = switchableFfmpeg()
  // Requests here wait seconds for renders, so kept-alive sockets idle long: the client, not the server, closes them.
  const server = { keepAliveTimeout: 0 }
  // The main gateway keeps the shipped sync_wait_s (120 s), so its answers are never the 202 hand-off.
  gw = await startGateway({ ROLE: "all", CONFIG_DIR: limitsFor(), FFMPEG_PATH: tools.path }, undefined, server)
  slow = await startGateway({ ROLE: "all", CONFIG_DIR: limitsFor(1), FFMPEG_PATH: slowTools.path }, undefined, server)
  png = await makePng(512, 512)
  mask = await makeLeftHalfMask(512, 512)
}, 120_000)
afterAll(async () => {
  tools?.hold(false)
  slowTools?.hold(false)
  await gw?.close()
  await slow?.close()
  removeScratch()
})

/** The official client as a caller configures it; no retries, so one call is one task. */
const openai = (target: TestGateway, key: string) =>
  new OpenAI({ apiKey: key, baseURL: `${target.url}/v1`, maxRetries: 0 })

const FORMATS = { png: { codec: "png" }, jpeg: { codec: "mjpeg" }, webp: { codec: "webp" } } as const

/** Decodes image bytes with the test's own ffprobe and checks codec and size. */
const expectImage = async (bytes: Uint8Array, format: keyof typeof FORMATS, width: number, height: number) => {
  const probed = await probeBytes(bytes)
  expect(probed.video).toMatchObject({ codec: FORMATS[format].codec, width, height })
}

const download = async (url: string) => {
  const reply = await fetch(url)
  expect(reply.status).toBe(200)
  return new Uint8Array(await reply.arrayBuffer())
}

const fromBase64 = (b64: string) => new Uint8Array(Buffer.from(b64, "base64"))

/** The account's image tasks, newest first. */
const tasksOf = async (target: TestGateway, resourceKey: string) => // A 200: the typed client decodes the contract's answer or fails.
[...(await api(target, { resource: resourceKey }).listImages()).data]

/** The validated request the engine runs, as stored with the task. */
const storedRequest = async (target: TestGateway, taskId: string) =>
  (await query<{ request: any }>(target, (sql) => sql`SELECT request FROM tasks WHERE id = ${taskId}`))[0]!.request

const walletOf = async (target: TestGateway, accountId: string) =>
  (await operator(target).account(accountId)).wallet_credits

/** The parts of the OpenAPI document this test reads. */
interface OpenApiPaths {
  readonly paths: Record<
    string,
    Record<string, { readonly requestBody?: { readonly content: object }; readonly responses: object }>
  >
}

const charged = (ledger: ReadonlyArray<{ kind: string; wallet_micros: number; subscription_micros: number }>) =>
  ledger.filter((l) => l.kind === "charge").reduce((sum, l) => sum + l.wallet_micros + l.subscription_micros, 0)

describe(`synchronous image endpoints (${backend})`, () => {
  it(
    "generations with url: the requested count, size, format and quality; charged as POST /v1/image/tasks",
    async () => {
      const acct = await createAccount(gw, { name: "sync-gen", group: "vip", wallet_credits: 10 })
      const params = {
        model: "provx-image-1",
        prompt: "a lighthouse at dusk",
        n: 2,
        size: "1536x1024",
        quality: "high",
        output_format: "webp"
      } as const
      const result = await openai(gw, acct.model.key).images.generate({ ...params, response_format: "url" })

      expect(Object.keys(result).sort()).toEqual(["created", "data", "usage"])
      expect(result.usage).toEqual({})
      expect(Number.isInteger(result.created)).toBe(true)
      expect(result.data).toHaveLength(2)
      for (const item of result.data!) {
        expect(Object.keys(item)).toEqual(["url"])
        await expectImage(await download(item.url!), "webp", 1536, 1024)
      }

      // One task, run by the engine, whose result the answer carries; each parameter reached its task field.
      const [task, ...others] = await tasksOf(gw, acct.resource.key)
      expect(others).toHaveLength(0)
      expect(task).toMatchObject({ status: "succeeded", operation: "generation", model: "provx-image-1" })
      expect(task.result!.images.map((i) => i.url)).toEqual(result.data!.map((d) => d.url))
      expect(result.created).toBe(task.completed_at)
      expect(await storedRequest(gw, task.id)).toMatchObject({
        prompt: params.prompt,
        count: 2,
        size: "1536x1024",
        quality: "high",
        format: "webp"
      })

      // The same request through POST /v1/image/tasks costs the same: 2 × 0.04 × the vip multiplier 0.8.
      const asynchronous = await api(gw, acct).createImageReply({
        model: params.model,
        operation: "generation",
        input: { prompt: params.prompt },
        output: { count: 2, size: params.size, quality: params.quality, format: params.output_format }
      })
      expect(asynchronous.status).toBe(202)
      expect(charged(await ledgerOf(gw, task!.id))).toBe(-64_000)
      expect(charged(await ledgerOf(gw, asynchronous.task.id))).toBe(charged(await ledgerOf(gw, task!.id)))
    },
    90_000
  )

  it("generations with b64_json: the stored result bytes; null parameters mean the model's defaults", async () => {
    const acct = await createAccount(gw, { name: "sync-b64", wallet_credits: 10 })
    const result = await openai(gw, acct.model.key).images.generate({
      model: "provy-image-1-fast",
      prompt: "a teapot",
      size: "512x512",
      output_format: "png",
      n: null,
      quality: null,
      response_format: "b64_json"
    })
    expect(result.data).toHaveLength(1)
    expect(Object.keys(result.data![0]!)).toEqual(["b64_json"])
    const bytes = fromBase64(result.data![0]!.b64_json!)
    await expectImage(bytes, "png", 512, 512)

    const [task] = await tasksOf(gw, acct.resource.key)
    expect(sha256(bytes)).toBe(sha256(await download(task.result!.images[0].url)))
    expect(await storedRequest(gw, task.id)).toMatchObject({ count: 1, quality: "standard", format: "png" })
  }, 60_000)

  it("edits (multipart): image and mask files reach the task; pixels under the opaque mask are kept", async () => {
    const acct = await createAccount(gw, { name: "sync-edit", wallet_credits: 10 })
    const client = openai(gw, acct.model.key)
    const result = await client.images.edit({
      model: "provx-image-1",
      image: await toFile(png, "photo.png", { type: "image/png" }),
      mask: await toFile(mask, "mask.png", { type: "image/png" }),
      prompt: "make it look like winter",
      n: 2,
      size: "512x512",
      output_format: "png",
      response_format: "b64_json"
    })
    expect(result.data).toHaveLength(2)
    const edited = fromBase64(result.data![0]!.b64_json!)
    await expectImage(edited, "png", 512, 512)
    const before = await rgbPixels(png)
    const after = await rgbPixels(edited)
    expect(columns(after, 512, 256, 512)).toEqual(columns(before, 512, 256, 512))
    expect(meanAbsDiff(columns(after, 512, 0, 256), columns(before, 512, 0, 256))).toBeGreaterThan(40)
    const [task] = await tasksOf(gw, acct.resource.key)
    expect(task).toMatchObject({ status: "succeeded", operation: "edit" })
    const request = await storedRequest(gw, task.id)
    expect(request).toMatchObject({ prompt: "make it look like winter", count: 2, size: "512x512", format: "png" })
    expect(request.images).toHaveLength(1)
    expect(request.mask).not.toBeNull()

    // A list of images is sent as repeated `image[]` parts; both become source images, in order.
    const editedFile = await toFile(edited, "second.png", { type: "image/png" })
    const listed = await client.images.edit({
      model: "provx-image-1",
      image: [await toFile(png, "first.png", { type: "image/png" }), editedFile],
      prompt: "sepia",
      size: "1024x1536",
      output_format: "jpeg"
    })
    await expectImage(await download(listed.data![0]!.url!), "jpeg", 1024, 1536)
    const [second] = await tasksOf(gw, acct.resource.key)
    expect(second.id).not.toBe(task.id)
    const images = (await storedRequest(gw, second.id)).images
    expect(images).toHaveLength(2)
    expect(images[0].storageKey).not.toBe(images[1].storageKey)
  }, 90_000)

  it(
    "refuses what POST /v1/image/tasks refuses, with its codes and the OpenAI parameter names; nothing is charged",
    async () => {
      const acct = await createAccount(gw, { name: "sync-invalid", wallet_credits: 10 })
      const client = openai(gw, acct.model.key)
      const tooMany = await client.images.generate({ model: "provx-image-1", prompt: "cats", n: 5 }).catch((e) => e)
      expect(tooMany).toBeInstanceOf(APIError)
      expect(tooMany).toMatchObject({ status: 400, code: "invalid_image_parameter", type: "invalid_request_error" })
      expect(tooMany.message).toContain(`"n"`)

      const base = { model: "provx-image-1", prompt: "a cat" }
      const cases: Array<[unknown, string, string?]> = [
        [{ ...base, size: "100x100" }, "invalid_image_parameter", `"size"`],
        [{ ...base, quality: "ultra" }, "invalid_image_parameter", `"quality"`],
        [{ ...base, output_format: "gif" }, "invalid_image_parameter", `"output_format"`],
        [{ ...base, prompt: "  " }, "invalid_request", `"prompt"`],
        [{ ...base, model: "nope" }, "unsupported_image_model"],
        [{ ...base, n: 1.5 }, "invalid_request"],
        [{ ...base, response_format: "png" }, "invalid_request"],
        [{ ...base, style: "vivid" }, "invalid_request"],
        [{ ...base, provider_options: { sandbox: { outcome: "fail" } } }, "invalid_request"],
        [{ prompt: "no model" }, "invalid_request"]
      ]
      for (const [json, code, names] of cases) {
        const reply = await raw(gw, "POST", "/v1/images/generations", { key: acct.model.key, json })
        expectError(reply, 400, code)
        if (names !== undefined) expect(errorOf(reply.body)?.message).toContain(names)
      }

      const form = (fields: Record<string, string>, files: Array<[string, Uint8Array]>) => {
        const body = new FormData()
        for (const [k, v] of Object.entries(fields)) body.append(k, v)
        for (const [field, bytes] of files) {
          body.append(
            field,
            new Blob([bytes.slice()], { type: "image/png" }),
            "f.png"
          )
        }
        return body
      }
      const editCases: Array<[FormData, string]> = [
        [form({ ...base }, []), "invalid_request"],
        [form({ ...base, model: "provy-image-1-fast" }, [["image", png]]), "unsupported_image_operation"],
        [form({ ...base, operation: "edit" }, [["image", png]]), "invalid_request"],
        [form({ ...base }, [["image", png], ["mask", mask], ["mask", mask]]), "invalid_request"],
        [form({ ...base }, [["picture", png]]), "invalid_request"],
        [form({ ...base }, [["image", new TextEncoder().encode("not an image")]]), "invalid_request"],
        [form({ ...base, n: "two" }, [["image", png]]), "invalid_request"]
      ]
      for (const [body, code] of editCases) {
        expectError(await raw(gw, "POST", "/v1/images/edits", { key: acct.model.key, body }), 400, code)
      }
      expectError(
        await raw(gw, "POST", "/v1/images/edits", { key: acct.model.key, json: base }),
        415,
        "unsupported_media_type"
      )
      // Model tokens only, as for creating tasks.
      expectError(
        await raw(gw, "POST", "/v1/images/generations", { key: acct.resource.key, json: base }),
        403,
        "permission_denied"
      )
      expectError(await raw(gw, "POST", "/v1/images/generations", { json: base }), 401, "invalid_api_key")

      expect(await tasksOf(gw, acct.resource.key)).toHaveLength(0)
      expect(await walletOf(gw, acct.id)).toBe(10)

      const reply = await raw(gw, "GET", "/openapi.json")
      expect(reply.status).toBe(200)
      expect(typeof reply.body).toBe("object")
      const doc = reply.body as OpenApiPaths
      expect(Object.keys(doc.paths)).toEqual(
        expect.arrayContaining(["/v1/images/generations", "/v1/images/edits"])
      )
      expect(Object.keys(doc.paths["/v1/images/edits"]?.post?.requestBody?.content ?? {})).toEqual([
        "multipart/form-data"
      ])
      expect(Object.keys(doc.paths["/v1/images/generations"]?.post?.responses ?? {})).toEqual(
        expect.arrayContaining(["200", "202"])
      )
    },
    60_000
  )

  it(
    "a task that fails with 524 answers 503 with Retry-After; refunded, its event written; a replay answers the same",
    async () => {
      const acct = await createAccount(gw, { name: "sync-524", wallet_credits: 10 })
      const request = { model: "provx-image-1", prompt: "a storm", size: "512x512" } as const
      tools.down(true)
      try {
        const thrown = await openai(gw, acct.model.key).images.generate(request).catch((e) => e)
        expect(thrown).toBeInstanceOf(APIError)
        expect(thrown).toMatchObject({ status: 503, code: "524", type: "api_error" })

        // Raw: the 503's Retry-After header is checked.
        const reply = await raw(gw, "POST", "/v1/images/generations", {
          key: acct.model.key,
          json: request,
          headers: { "idempotency-key": "storm-1" }
        })
        expectError(reply, 503, "524", "api_error")
        expect(reply.headers.get("retry-after")).toBe("5")
        expect(errorOf(reply.body)?.message).toBe(
          "The image service is temporarily unavailable. Create a new task to try again."
        )
      } finally {
        tools.down(false)
      }

      const tasks = await tasksOf(gw, acct.resource.key)
      expect(tasks).toHaveLength(2)
      for (const task of tasks) {
        expect(task).toMatchObject({ status: "failed", error: { code: "524", retryable: true } })
        expect((await ledgerOf(gw, task.id)).map((l) => l.kind)).toEqual(["charge", "refund"])
        expect((await eventsOf(gw, task.id)).map((e) => e.type)).toEqual(["image.task.failed"])
      }
      expect(await walletOf(gw, acct.id)).toBe(10)

      // The service is up again, but the key names the failed task: it is answered again, not run again.
      const replay = await raw(gw, "POST", "/v1/images/generations", {
        key: acct.model.key,
        json: request,
        headers: { "idempotency-key": "storm-1" }
      })
      expectError(replay, 503, "524")
      expect(replay.headers.get("idempotent-replayed")).toBe("true")
      expect(await tasksOf(gw, acct.resource.key)).toHaveLength(2)
    },
    60_000
  )

  it("another failure answers 502 with the task's error code; refunded", async () => {
    const acct = await createAccount(gw, { name: "sync-502", wallet_credits: 10 })
    // A file where the local store keeps results: every result write fails, as with a broken bucket.
    const results = join(gw.dataDir, "objects", "results")
    const aside = `${results}.aside`
    if (existsSync(results)) renameSync(results, aside)
    writeFileSync(results, "")
    let thrown: any
    try {
      thrown = await openai(gw, acct.model.key).images.generate({
        model: "provy-image-1-fast",
        prompt: "a cup",
        size: "512x512"
      })
        .catch((e) => e)
    } finally {
      rmSync(results, { force: true })
      if (existsSync(aside)) renameSync(aside, results)
    }
    expect(thrown).toBeInstanceOf(APIError)
    expect(thrown).toMatchObject({ status: 502, code: "image_task_failed", type: "api_error" })
    expect(thrown.headers.get("retry-after")).toBeNull()
    expect(Object.keys(thrown.error).sort()).toEqual(["code", "message", "request_id", "type"])

    const [task] = await tasksOf(gw, acct.resource.key)
    expect(task).toMatchObject({ status: "failed", error: { code: "image_task_failed" } })
    expect(thrown.error.message).toBe(task.error?.message)
    expect((await ledgerOf(gw, task.id)).map((l) => l.kind)).toEqual(["charge", "refund"])
    expect(await walletOf(gw, acct.id)).toBe(10)
  }, 60_000)

  it(
    "Idempotency-Key: a replay answers the same task's images in either format, charged once; other content is 409",
    async () => {
      const acct = await createAccount(gw, { name: "sync-idem", wallet_credits: 10 })
      const client = openai(gw, acct.model.key)
      const request = { model: "provy-image-1-fast", prompt: "a lamp", size: "512x512" } as const
      const key = { headers: { "Idempotency-Key": "lamp-1" } }
      const first = await client.images.generate({ ...request, response_format: "url" }, key).withResponse()
      expect(first.response.headers.get("idempotent-replayed")).toBeNull()
      const again = await client.images.generate({ ...request, response_format: "url" }, key).withResponse()
      expect(again.response.headers.get("idempotent-replayed")).toBe("true")
      expect(again.data.data).toEqual(first.data.data)
      expect(again.data.created).toBe(first.data.created)

      const asBase64 = await client.images.generate({ ...request, response_format: "b64_json" }, key)
      expect(sha256(fromBase64(asBase64.data![0]!.b64_json!))).toBe(sha256(await download(first.data.data![0]!.url!)))

      const other = await client.images.generate({ ...request, prompt: "a chair" }, key).catch((e) => e)
      expect(other).toMatchObject({ status: 409, code: "idempotency_key_conflict" })

      // The key's content is the task itself: the same task asked of POST /v1/image/tasks is that task.
      const tasks = await tasksOf(gw, acct.resource.key)
      expect(tasks).toHaveLength(1)
      const asTask = await api(gw, acct).createImageReply({
        model: request.model,
        operation: "generation",
        input: { prompt: request.prompt },
        output: { size: request.size }
      }, { idempotencyKey: "lamp-1" })
      expect(asTask.status).toBe(202)
      expect(asTask.task.id).toBe(tasks[0]!.id)
      expect(asTask.headers["idempotent-replayed"]).toBe("true")
      expect((await ledgerOf(gw, tasks[0]!.id)).map((l) => l.kind)).toEqual(["charge"])
    },
    60_000
  )

  it(
    "past sync_wait_s: 202 with the task and Location; the task runs on and a replay then answers its images",
    async () => {
      const acct = await createAccount(slow, { name: "sync-slow", wallet_credits: 10 })
      const request = { model: "provx-image-1", prompt: "a slow boat", size: "1024x1536", output_format: "jpeg" }
      const headers = { "idempotency-key": "slow-1" }
      slowTools.hold(true)
      // Raw: the 202's Location and Retry-After headers are the point.
      let reply
      try {
        reply = await raw(slow, "POST", "/v1/images/generations", { key: acct.model.key, json: request, headers })
      } finally {
        slowTools.hold(false)
      }
      expect(reply.status).toBe(202)
      const queued = Schema.decodeUnknownSync(ImageTask)(reply.body)
      expect(reply.headers.get("location")).toBe(`/v1/image/tasks/${queued.id}`)
      expect(reply.headers.get("retry-after")).toBe("5")
      expect(queued).toMatchObject({ object: "image.task", operation: "generation", result: null, error: null })
      expect(["queued", "in_progress"]).toContain(queued.status)

      const done = (await api(slow, acct).waitTask("image", queued.id)).at(-1)!
      expect(done.status).toBe("succeeded")
      await expectImage(await download(done.result!.images[0]!.url), "jpeg", 1024, 1536)

      const replay = await raw(slow, "POST", "/v1/images/generations", { key: acct.model.key, json: request, headers })
      expect(replay.status).toBe(200)
      expect(typeof replay.body).toBe("object")
      expect((replay.body as { data?: unknown }).data).toEqual([{ url: done.result!.images[0]!.url }])
      expect((await ledgerOf(slow, queued.id)).map((l) => l.kind)).toEqual(["charge"])
    },
    90_000
  )

  it("a client that disconnects ends only its wait: the task runs on to success", async () => {
    const acct = await createAccount(slow, { name: "sync-abort", wallet_credits: 10 })
    slowTools.hold(true)
    const abort = new AbortController()
    let pending: Promise<unknown> | undefined
    try {
      pending = openai(slow, acct.model.key).images
        .generate({ model: "provy-image-1-fast", prompt: "a kite", size: "512x512" }, { signal: abort.signal })
        .catch((e) => e)
      // Disconnect once the engine holds the task (its render is held), i.e. while the request waits.
      await eventually(
        async () => (await tasksOf(slow, acct.resource.key))[0]?.status === "in_progress",
        "the task started",
        { intervalMs: 50 }
      )
      abort.abort()
      expect(await pending).toBeInstanceOf(Error)
    } finally {
      slowTools.hold(false)
    }
    const [task] = await tasksOf(slow, acct.resource.key)
    const done = (await api(slow, acct).waitTask("image", task!.id)).at(-1)
    expect(done?.status).toBe("succeeded")
    expect((await ledgerOf(slow, task!.id)).map((l) => l.kind)).toEqual(["charge"])
  }, 60_000)
})
