import { Schema } from "effect"
import { request as httpRequest } from "node:http"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type ImageUploadBase64Request, ImageUploadList } from "../../src/uploads/Upload.ts"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { errorOf, expectError, raw, type RawReply } from "../support/http.ts"
import { randomBytes } from "../support/storage.ts"
import { makeAudio, makeImage } from "../support/uploads.ts"

/**
 * The image pre-upload in both forms: multipart (`image` repeatable, `mask`
 * optional) and JSON base64 (plain strings, data URLs, objects with exactly
 * one content key and `field`). Every file is checked from its bytes;
 * every refusal names its item; bodies are bounded (413).
 */

/** The image plugin's largest input (provx-image-1: 20 MiB) and most images (16, as the image edit APIs take). */
const MAX_BYTES = 20 * 1024 * 1024
const MAX_IMAGES = 16

let gw: TestGateway
let key: string
let modelKey: string
const media: Record<string, Uint8Array> = {}

beforeAll(async () => {
  const [started, png, jpg, webp, wav] = await Promise.all([
    startGateway(),
    makeImage("png"),
    makeImage("jpg"),
    makeImage("webp"),
    makeAudio("wav", 1)
  ])
  gw = started
  Object.assign(media, { png, jpg, webp, wav })
  const acct = await createAccount(gw, { name: "images" })
  key = acct.resource.key
  modelKey = acct.model.key
})
afterAll(() => gw?.close())

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")

const form = (parts: Array<[string, Uint8Array | string, string?]>) => {
  const data = new FormData()
  for (const [name, value, filename] of parts) {
    if (typeof value === "string") data.append(name, value)
    else data.append(name, new Blob([value as Uint8Array<ArrayBuffer>]), filename ?? "file.bin")
  }
  return data
}

// Raw: what is refused on purpose, and an answer whose exact fields are the point.
const multipart = (parts: Array<[string, Uint8Array | string, string?]>, as = key) =>
  raw(gw, "POST", "/v1/image/uploads", { key: as, body: form(parts) })

const base64 = (images: unknown, as = key) => raw(gw, "POST", "/v1/image/uploads/base64", { key: as, json: { images } })

/** A raw answer's list, decoded with the contract's schema (after its status was checked). */
const listOf = (reply: RawReply) => Schema.decodeUnknownSync(ImageUploadList)(reply.body)

type Base64Items = typeof ImageUploadBase64Request.Type["images"]

// Through the typed client: valid calls, their answer decoded (a 200 or they reject).
const uploadBase64 = (images: Base64Items) =>
  api(gw, { resource: key }).client((c) => c.resource.uploads.createImageUploadsBase64({ payload: { images } }))
const uploadForm = (parts: Array<[string, Uint8Array | string, string?]>) =>
  api(gw, { resource: key }).client((c) => c.resource.uploads.createImageUploads({ payload: form(parts) }))

/** Each URL serves the expected bytes with the real type and expires after image_url_ttl_s (1 day). */
const expectServed = async (urls: Array<string>, expected: Array<[Uint8Array, string]>) => {
  expect(urls).toHaveLength(expected.length)
  for (const [i, url] of urls.entries()) {
    const expires = Number(new URL(url).searchParams.get("X-Expires"))
    expect(Math.abs(expires - (Math.floor(Date.now() / 1000) + 86_400))).toBeLessThanOrEqual(5)
    const res = await fetch(url)
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toBe(expected[i]![1])
    expect(Buffer.from(await res.arrayBuffer()).equals(Buffer.from(expected[i]![0]))).toBe(true)
  }
}

const refused = async (reply: RawReply, message: RegExp, status = 400, code = "invalid_request") => {
  expectError(reply, status, code)
  expect(errorOf(reply.body)?.message).toMatch(message)
}

describe(`image pre-upload (${backend})`, () => {
  it("multipart: repeatable image files and a mask, checked from their bytes whatever their names", async () => {
    const reply = await multipart([
      ["image", media.png!, "a.jpg"],
      ["image", media.jpg!, "b.png"],
      ["image", media.webp!, "c"],
      ["mask", media.png!, "mask.png"]
    ])
    expect(reply.status).toBe(200)
    const list = listOf(reply)
    expect(Object.keys(list).sort()).toEqual(["data", "images", "mask", "object"])
    expect(reply.body).toEqual(list)
    expect(list).toMatchObject({ object: "image.upload.list", data: [] })
    await expectServed([...list.images], [[media.png!, "image/png"], [media.jpg!, "image/jpeg"], [
      media.webp!,
      "image/webp"
    ]])
    await expectServed([list.mask!], [[media.png!, "image/png"]])

    const noMask = await multipart([["image", media.jpg!]])
    expect(noMask.status).toBe(200)
    const noMaskList = listOf(noMask)
    expect(noMask.body).toEqual(noMaskList)
    expect(Object.keys(noMaskList).sort()).toEqual(["data", "images", "object"])
  })

  it("base64: plain strings, data URLs, b64_json / base64 / data objects with field, URL-safe and wrapped base64", async () => {
    const urlSafe = Buffer.from(media.webp!).toString("base64url")
    const wrapped = b64(media.jpg!).replace(/.{60}/g, "$&\n")
    // A 200: the typed client decodes the contract's answer or fails.
    const reply = await uploadBase64([
      b64(media.png!),
      `data:image/jpeg;base64,${b64(media.jpg!)}`,
      { b64_json: urlSafe },
      { base64: wrapped, field: "image" },
      // The declared type of a data URL is not trusted: the bytes say PNG.
      { data: `data:image/webp;base64,${b64(media.png!)}`, field: "mask" }
    ])
    expect(reply).toMatchObject({ object: "image.upload.list", data: [] })
    await expectServed([...reply.images], [
      [media.png!, "image/png"],
      [media.jpg!, "image/jpeg"],
      [media.webp!, "image/webp"],
      [media.jpg!, "image/jpeg"]
    ])
    await expectServed([reply.mask!], [[media.png!, "image/png"]])
  })

  it("up to 16 images per call (the image edit APIs' bound, from the image plugin's table) plus a mask; 17 are refused", async () => {
    const sixteen = Array.from({ length: MAX_IMAGES }, (_, i) => (i % 2 === 0 ? media.png! : media.jpg!))
    // 200s: the typed client decodes the contract's answer or fails.
    const viaBase64 = await uploadBase64([...sixteen.map(b64), { b64_json: b64(media.png!), field: "mask" }])
    await expectServed(
      [...viaBase64.images],
      sixteen.map((bytes, i) => [bytes, i % 2 === 0 ? "image/png" : "image/jpeg"])
    )
    expect(typeof viaBase64.mask).toBe("string")
    const viaForm = await uploadForm([...sixteen.map((bytes): [string, Uint8Array] => ["image", bytes]), [
      "mask",
      media.png!
    ]])
    expect(viaForm.images).toHaveLength(16)

    const seventeen = [...sixteen, media.webp!]
    await refused(await base64(seventeen.map(b64)), /At most 16 images are accepted per call; got 17/)
    await refused(
      await multipart(seventeen.map((bytes): [string, Uint8Array] => ["image", bytes])),
      /At most 16 images are accepted per call; got 17/
    )
  })

  it("base64: each bad item is a 400 naming it", async () => {
    const png = b64(media.png!)
    const truncated = b64(media.png!.subarray(0, 120))
    await refused(await base64(["not base64 at all!"]), /images\[0\] is not valid base64/)
    await refused(await base64([png, "QUJD="]), /images\[1\] is not valid base64/)
    await refused(
      await base64([png, b64(new TextEncoder().encode("hello, plain text"))]),
      /images\[1\] is not a usable PNG, JPEG or WebP image/
    )
    await refused(await base64([b64(media.wav!)]), /images\[0\] is not an image: it is audio\/wav/)
    await refused(await base64([truncated]), /images\[0\] is not a usable PNG, JPEG or WebP image/)
    await refused(
      await base64([{ b64_json: png, base64: png }]),
      /images\[0\] must hold exactly one of b64_json, base64, data; it holds b64_json and base64/
    )
    await refused(await base64([png, { field: "image" }]), /images\[1\] must hold exactly one .* it holds none/)
    await refused(await base64([{ b64_json: png, name: "x" }]), /images\[0\] has an unknown field "name"/)
    await refused(await base64([{ b64_json: png, field: "banner" }]), /images\[0\]\.field must be "image" or "mask"/)
    await refused(await base64([{ data: 5 }]), /images\[0\]\.data must be a string/)
    await refused(await base64([42]), /images\[0\] must be a base64 string/)
    await refused(await base64(["data:image/png,rawbytes"]), /images\[0\] is a data URL without ";base64"/)
    await refused(await base64([""]), /images\[0\] is empty/)
    // Counts.
    await refused(await base64([]), /At least one image/)
    await refused(await base64([{ b64_json: png, field: "mask" }]), /At least one image/)
    await refused(
      await base64([png, { b64_json: png, field: "mask" }, { b64_json: png, field: "mask" }]),
      /At most one mask/
    )
    await refused(
      await base64(Array.from({ length: MAX_IMAGES + 1 }, () => png)),
      /At most 16 images are accepted per call; got 17/
    )
    await refused(await base64(Array.from({ length: MAX_IMAGES + 2 }, () => png)), /At most 16 images and one mask/)
    // The envelope.
    await refused(await base64("x"), /images/)
    await refused(
      await raw(gw, "POST", "/v1/image/uploads/base64", { key, json: { images: [png], extra: 1 } }),
      /extra/
    )
    expectError(
      await raw(gw, "POST", "/v1/image/uploads/base64", { key, body: png, headers: { "content-type": "text/plain" } }),
      415,
      "unsupported_media_type"
    )
    expectError(await base64([png], modelKey), 403, "permission_denied")
  })

  it("multipart: each bad part is a 400 naming it", async () => {
    await refused(
      await multipart([["image", media.png!], ["image", media.wav!, "x.png"]]),
      /image\[1\] is not an image: it is audio\/wav/
    )
    await refused(
      await multipart([["image", new TextEncoder().encode("plain text")]]),
      /image\[0\] is not a usable PNG, JPEG or WebP image/
    )
    await refused(
      await multipart([["image", media.png!], ["mask", media.png!], ["mask", media.png!]]),
      /At most one mask/
    )
    await refused(await multipart([["mask", media.png!]]), /At least one image/)
    await refused(await multipart([["picture", media.png!]]), /Unknown file field "picture"/)
    await refused(await multipart([["image", media.png!], ["model", "provx-image-1"]]), /Unknown form field "model"/)
    await refused(await multipart([["image", new Uint8Array(0)]]), /image\[0\] is empty/)
    expectError(
      await raw(gw, "POST", "/v1/image/uploads", { key, json: { images: [] } }),
      415,
      "unsupported_media_type"
    )
  })

  it("bounded bodies: a file over the per-file limit, and a declared length over the body limit, are 413", async () => {
    const big = randomBytes(MAX_BYTES + 1)
    await refused(
      await base64([b64(media.png!), b64(big)]),
      /images\[1\] is larger than 20971520 bytes/,
      413,
      "request_too_large"
    )
    expectError(await multipart([["image", big, "big.png"]]), 413, "request_too_large")
    // Exactly at the limit passes the size check (and is then refused as not an image).
    await refused(await base64([b64(big.subarray(0, MAX_BYTES))]), /images\[0\] is not a usable/)

    // A declared Content-Length over the limit is refused before any byte is read.
    const perItem = Math.ceil(MAX_BYTES / 3) * 4 + 256
    const limit = perItem * (MAX_IMAGES + 1) + 64 * 1024
    const reply = await new Promise<{ status: number; body: unknown }>((resolve, reject) => {
      const req = httpRequest(`${gw.url}/v1/image/uploads/base64`, {
        method: "POST",
        headers: {
          authorization: `Bearer ${key}`,
          "content-type": "application/json",
          "content-length": String(limit + 1)
        }
      }, (res) => {
        let text = ""
        res.on("data", (c) => (text += c))
        res.on("end", () => resolve({ status: res.statusCode!, body: JSON.parse(text) as unknown }))
      })
      req.on("error", reject)
      req.flushHeaders()
    })
    expect(reply.status).toBe(413)
    expect(errorOf(reply.body)?.code).toBe("request_too_large")
  })
})
