import { connect } from "node:net"
import { crc32 } from "node:zlib"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { errorOf, expectError, raw, rawAdmin } from "../support/http.ts"
import { makePng } from "../support/images.ts"
import { videoRequest } from "../support/tasks.ts"

/**
 * Input an attacker would send: text PostgreSQL cannot store, hostile JSON
 * nesting, broken and stalled multipart bodies, and image files that are not
 * what they claim. Each is a 4xx with the spec's error body, in time, and
 * nothing is created or charged.
 */

const READ_TIMEOUT_S = 2
const UPLOAD_BYTES = 4 * 1024 * 1024
let gw: TestGateway
let acct: Awaited<ReturnType<typeof createAccount>>
let png: Uint8Array

beforeAll(async () => {
  const config = configWith("limits.json", (limits) => {
    limits.body.read_timeout_s = READ_TIMEOUT_S
    limits.body.upload_bytes = UPLOAD_BYTES
    for (const rate of Object.values(limits.rate_limits) as Array<{ burst: number; per_second: number }>) {
      rate.burst = rate.per_second = 100_000
    }
  })
  gw = await startGateway({ CONFIG_DIR: config })
  acct = await createAccount(gw, { name: "hostile", wallet_credits: 100 })
  png = await makePng(64, 64)
})
afterAll(() => gw?.close())

const NUL = "\u0000"
const LONE_SURROGATE = "\ud800"

/** The account's balance and task count, to show nothing was created or charged. */
const footprint = async () => {
  const detail = await operator(gw).account(acct.id)
  const tasks = await api(gw, acct).listVideos({ limit: 100 })
  const images = await api(gw, acct).listImages({ limit: 100 })
  return { wallet: detail.wallet_credits, tasks: tasks.data.length + images.data.length }
}

/** A raw request over one socket, for bodies `fetch` will not send; resolves with the status line and body. */
const rawRequest = (head: string, body: Uint8Array | string, { keepOpen = false } = {}) =>
  new Promise<{ status: number; body: string; elapsedMs: number }>((resolve, reject) => {
    const started = Date.now()
    const url = new URL(gw.url)
    const socket = connect(Number(url.port), url.hostname)
    let received = ""
    socket.setEncoding("latin1")
    socket.on("data", (chunk) => {
      received += chunk
    })
    socket.on("error", reject)
    const finish = () => {
      const status = Number(received.split(" ")[1])
      if (!Number.isInteger(status)) return reject(new Error(`no HTTP answer: ${JSON.stringify(received)}`))
      resolve({ status, body: received.slice(received.indexOf("\r\n\r\n") + 4), elapsedMs: Date.now() - started })
    }
    socket.on("end", finish)
    socket.on("close", () => received.length > 0 || reject(new Error("closed without an answer")))
    socket.write(head)
    socket.write(body)
    // Without keepOpen the request is complete: ask the server to close after answering.
    if (!keepOpen) socket.setTimeout(15_000, () => socket.destroy(new Error("no answer within 15 s")))
    else socket.setTimeout(20_000, () => socket.destroy(new Error("no answer within 20 s")))
  })

const multipartHead = (path: string, key: string, boundary: string, length: number) =>
  [
    `POST ${path} HTTP/1.1`,
    `Host: 127.0.0.1`,
    `Authorization: Bearer ${key}`,
    `Content-Type: multipart/form-data; boundary=${boundary}`,
    `Content-Length: ${length}`,
    `Connection: close`,
    "",
    ""
  ].join("\r\n")

const B = "XyZzy0123"
const part = (name: string, value: string, filename?: string) =>
  `--${B}\r\nContent-Disposition: form-data; name="${name}"${filename ? `; filename="${filename}"` : ""}\r\n` +
  `${filename ? "Content-Type: image/png\r\n" : ""}\r\n${value}\r\n`

describe(`text the database cannot store (${backend})`, () => {
  const cases: Array<[string, string, string, unknown]> = [
    ["prompt with NUL", "POST", "/v1/video/tasks", videoRequest({ input: { prompt: `a${NUL}b` } })],
    [
      "prompt with a lone surrogate",
      "POST",
      "/v1/video/tasks",
      videoRequest({ input: { prompt: `a${LONE_SURROGATE}b` } })
    ],
    ["metadata key with NUL", "POST", "/v1/video/tasks", videoRequest({ metadata: { [`k${NUL}`]: 1 } })],
    ["metadata value with NUL", "POST", "/v1/video/tasks", videoRequest({ metadata: { k: [`v${NUL}`] } })],
    ["client_reference_id with NUL", "POST", "/v1/video/tasks", videoRequest({ client_reference_id: NUL })],
    ["image prompt with NUL", "POST", "/v1/image/tasks", {
      model: "provx-image-1",
      operation: "generation",
      input: { prompt: NUL }
    }],
    ["batch query id with NUL", "POST", "/v1/video/tasks/query", { task_ids: [`task_${NUL}`] }],
    ["upload file name with NUL", "POST", "/v1/media/uploads", {
      files: [{ client_id: "c", kind: "video", filename: `a${NUL}.mp4`, mime_type: "video/mp4", size_bytes: 100 }]
    }],
    ["upload id with a lone surrogate", "POST", "/v1/media/uploads/complete", { upload_ids: [`upl_${LONE_SURROGATE}`] }]
  ]

  it.each(cases)("%s: 400 invalid_request naming the field; nothing created", async (_, method, path, json) => {
    const before = await footprint()
    const key = path.startsWith("/v1/video/tasks/query") || path.startsWith("/v1/media")
      ? acct.resource.key
      : acct.model.key
    const reply = await raw(gw, method, path, { key, json })
    expectError(reply, 400, "invalid_request", "invalid_request_error")
    expect(errorOf(reply.body)?.message).toMatch(/NUL|surrogate/)
    expect(await footprint()).toEqual(before)
  })

  it("names the field where the bad text is", async () => {
    const reply = await raw(gw, "POST", "/v1/video/tasks", {
      key: acct.model.key,
      json: videoRequest({ metadata: { tags: ["ok", `x${NUL}`] } })
    })
    expect(errorOf(reply.body)?.message).toContain("metadata.tags[1]")
  })

  it("admin fields: an account name with NUL is a 400", async () => {
    expectError(await rawAdmin(gw, "POST", "/admin/v1/accounts", { name: `evil${NUL}` }), 400, "invalid_request")
  })

  it("query parameters with NUL are a 400 naming the parameter", async () => {
    const reply = await raw(gw, "GET", "/v1/video/tasks?client_reference_id=%00", { key: acct.resource.key })
    expectError(reply, 400, "invalid_request")
    expect(errorOf(reply.body)?.message).toContain("client_reference_id")
  })

  it("ids in paths that cannot exist are simply not found", async () => {
    for (const id of ["%00", "task_%00", "task_%ED%A0%80", "x".repeat(5000)]) {
      expectError(await raw(gw, "GET", `/v1/video/tasks/${id}`, { key: acct.resource.key }), 404, "task_not_found")
      expectError(await raw(gw, "GET", `/v1/image/tasks/${id}`, { key: acct.resource.key }), 404, "task_not_found")
    }
    expectError(await rawAdmin(gw, "GET", "/admin/v1/accounts/acct_%00"), 404, "account_not_found")
  })
})

describe(`JSON nesting (${backend})`, () => {
  /** `depth` objects (at least one), each the only field `n` of the one above, around "leaf". */
  const nested = (depth: number): { readonly n: unknown } => {
    let value: { readonly n: unknown } = { n: "leaf" }
    for (let i = 1; i < depth; i++) value = { n: value }
    return value
  }

  it("metadata nested 10,000 deep is a 400, not a database error", async () => {
    const reply = await raw(gw, "POST", "/v1/video/tasks", {
      key: acct.model.key,
      body: JSON.stringify(videoRequest()).replace(/}$/, `,"metadata":${"[".repeat(10_000)}${"]".repeat(10_000)}}`),
      headers: { "content-type": "application/json" }
    })
    expectError(reply, 400, "invalid_request")
    expect(errorOf(reply.body)?.message).toMatch(/nested deeper than 64/)
  })

  it("64 levels in metadata pass the bound; 65 do not, nor in provider_options", async () => {
    const ok = await api(gw, acct).createVideoReply({ ...videoRequest(), metadata: nested(64) })
    expect(ok.status).toBe(202)
    expect(ok.task.metadata).toEqual(nested(64))
    const deep = await raw(gw, "POST", "/v1/video/tasks", {
      key: acct.model.key,
      json: { ...videoRequest(), metadata: nested(65) }
    })
    expectError(deep, 400, "invalid_request")
    const options = await raw(gw, "POST", "/v1/video/tasks", {
      key: acct.model.key,
      json: { ...videoRequest(), provider_options: { sandbox: nested(70) } }
    })
    expectError(options, 400, "invalid_request")
    expect(errorOf(options.body)?.message).toMatch(/nested deeper than 64/)
  })
})

describe(`broken and stalled multipart bodies (${backend})`, () => {
  const whole = part("model", "provx-image-1") + part("operation", "edit") + part("prompt", "p") + `--${B}--\r\n`
  const bodies: Array<[string, string]> = [
    ["empty", ""],
    ["truncated in a part", whole.slice(0, whole.indexOf("prompt") + 10)],
    ["without its closing boundary", whole.slice(0, whole.lastIndexOf(`--${B}--`))],
    ["garbage", "this is not multipart at all"]
  ]
  const endpoints = [
    ["/v1/image/uploads", () => acct.resource.key],
    ["/v1/image/tasks", () => acct.model.key]
  ] as const

  for (const [path, key] of endpoints) {
    it.each(bodies)(`${path}: %s, with a complete Content-Length, is a 400 at once`, async (_, body) => {
      const before = await footprint()
      const reply = await rawRequest(multipartHead(path, key(), B, Buffer.byteLength(body)), body)
      expect(reply.status).toBe(400)
      expect(errorOf(JSON.parse(reply.body) as unknown)).toMatchObject({
        type: "invalid_request_error",
        code: "invalid_request"
      })
      expect(await footprint()).toEqual(before)
    })

    it(`${path}: a body that stalls ends with 408 at the read deadline, and the server answers meanwhile`, async () => {
      const sent = part("model", "provx-image-1")
      const stalled = rawRequest(multipartHead(path, key(), B, 100_000), sent, { keepOpen: true })
      const health = await raw(gw, "GET", "/healthz")
      expect(health.status).toBe(200)
      const reply = await stalled
      expect(reply.status).toBe(408)
      expect(errorOf(JSON.parse(reply.body) as unknown)?.code).toBe("request_timeout")
      expect(reply.elapsedMs).toBeGreaterThanOrEqual(READ_TIMEOUT_S * 1000 - 100)
    })
  }

  it("a body that carries files is bounded by body.upload_bytes, whatever the per-file limits add up to: 413", async () => {
    const big = new Uint8Array(UPLOAD_BYTES + 1024)
    const form = new FormData()
    form.append("image", new Blob([big], { type: "image/png" }), "big.png")
    expectError(
      await raw(gw, "POST", "/v1/image/uploads", { key: acct.resource.key, body: form }),
      413,
      "request_too_large"
    )
    const base64 = { images: [Buffer.from(big).toString("base64")] }
    expectError(
      await raw(gw, "POST", "/v1/image/uploads/base64", { key: acct.resource.key, json: base64 }),
      413,
      "request_too_large"
    )
  })

  it("a file name or field with NUL is a 400", async () => {
    const body = part("model", "provx-image-1") + part("operation", `edit${NUL}`) + `--${B}--\r\n`
    const reply = await rawRequest(multipartHead("/v1/image/tasks", acct.model.key, B, Buffer.byteLength(body)), body)
    expect(reply.status).toBe(400)
    expect(errorOf(JSON.parse(reply.body) as unknown)?.message).toMatch(/NUL/)
  })
})

/** A PNG whose header declares other dimensions, with its checksum fixed so only the size is a lie. */
const withDimensions = (source: Uint8Array, width: number, height: number) => {
  const bytes = new Uint8Array(source)
  const view = new DataView(bytes.buffer)
  // Signature (8), IHDR length (4), "IHDR" (4), then width and height; the CRC covers type and data.
  view.setUint32(16, width)
  view.setUint32(20, height)
  view.setUint32(29, crc32(bytes.subarray(12, 29)))
  return bytes
}

describe(`image files that are not what they claim, at create (${backend})`, () => {
  const editForm = (image: Uint8Array) => {
    const form = new FormData()
    form.set("model", "provx-image-1")
    form.set("operation", "edit")
    form.set("prompt", "make it blue")
    form.append("image", new Blob([new Uint8Array(image)], { type: "image/png" }), "in.png")
    return form
  }
  /** An edit with a file that is not what it claims: sent as it is, outside the typed client. */
  const editWith = (image: Uint8Array) =>
    raw(gw, "POST", "/v1/image/tasks", { key: acct.model.key, body: editForm(image) })

  it("a real PNG is accepted (the control)", async () => {
    expect((await api(gw, acct).createImageReply(editForm(png))).status).toBe(202)
  })

  it("a PNG behind a JPEG header is a 400; nothing is charged", async () => {
    const before = await footprint()
    const jpegHeader = new Uint8Array([0xff, 0xd8, 0xff, 0xe0, 0x00, 0x10, 0x4a, 0x46, 0x49, 0x46, 0x00, 0x01])
    const reply = await editWith(new Uint8Array([...jpegHeader, ...png]))
    expectError(reply, 400, "invalid_request")
    expect(errorOf(reply.body)?.message).toMatch(/image\[0\]/)
    expect(await footprint()).toEqual(before)
  })

  it("a decompression bomb (a PNG declaring 60000 × 60000) is a 400; nothing is charged", async () => {
    const before = await footprint()
    const reply = await editWith(withDimensions(png, 60_000, 60_000))
    expectError(reply, 400, "invalid_request")
    expect(errorOf(reply.body)?.message).toMatch(/image\[0\]/)
    expect(await footprint()).toEqual(before)
  })
})
