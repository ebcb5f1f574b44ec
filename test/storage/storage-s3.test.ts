import { Chunk, Effect, Option, Stream } from "effect"
import { existsSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { StorageError } from "../../src/storage/ObjectStorage.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { expectError, raw } from "../support/http.ts"
import { startS3rver } from "../support/s3rver.ts"
import { bytesOf, randomBytes, send, shiftedClock, sourceFile, withParam, withStorage } from "../support/storage.ts"

const BUCKET = "gw-test-bucket"

let s3: Awaited<ReturnType<typeof startS3rver>>
let gw: TestGateway
beforeAll(async () => {
  s3 = await startS3rver(BUCKET)
  gw = await startGateway(s3.env)
})
afterAll(async () => {
  await gw?.close()
  await s3?.close()
})

let n = 0
const freshKey = (name = "clip.mp4") => `uploads/acct_s3/up_${++n}/${name}`
const head = (key: string) => withStorage(gw, (s) => s.head(key))
const presignPut = (key: string, contentType: string, contentLength: number, expiresInS = 600) =>
  withStorage(gw, (s) => s.presignPut(key, { contentType, contentLength, expiresInS }))
const presignGet = (key: string) => withStorage(gw, (s) => s.presignGet(key, { expiresInS: 600 }))
const put = (url: string, body: BodyInit, contentType?: string) =>
  send(url, { method: "PUT", body, headers: contentType === undefined ? {} : { "content-type": contentType } })
const collect = (body: Stream.Stream<Uint8Array, unknown>) =>
  Effect.map(Stream.runCollect(body), (chunks) => Buffer.concat(Chunk.toReadonlyArray(chunks)))
/** s3rver's refusals are S3's XML error documents. */
const s3Code = (reply: { body: unknown }) =>
  /<Code>([^<]+)<\/Code>/.exec(new TextDecoder().decode(reply.body as Uint8Array))?.[1]

describe(`S3 object storage against s3rver (${backend})`, () => {
  it("a pre-signed PUT by plain fetch stores the bytes in the bucket; a pre-signed GET returns them", async () => {
    const key = freshKey()
    const data = randomBytes(300_000)
    const upload = await presignPut(key, "video/mp4", data.length, 900)
    const url = new URL(upload.url)
    expect(url.origin).toBe(s3.endpoint)
    expect(url.pathname).toBe(`/${BUCKET}/${key}`)
    expect(url.searchParams.get("X-Amz-Expires")).toBe("900")
    // Both headers are in the signature, so S3 holds the uploader to them.
    expect(url.searchParams.get("X-Amz-SignedHeaders")).toBe("content-length;content-type;host")
    // No checksum of an empty body may ride along (it would not match the real upload).
    expect([...url.searchParams.keys()].filter((k) => k.toLowerCase().includes("checksum"))).toEqual([])
    expect(upload.headers).toEqual({ "Content-Type": "video/mp4" })

    expect((await put(upload.url, data, "video/mp4")).status).toBe(200)
    expect(await head(key)).toEqual(Option.some({ size: data.length, contentType: "video/mp4" }))

    const download = await presignGet(key)
    expect(new URL(download.url).origin).toBe(s3.endpoint)
    const got = await send(download.url)
    expect(got.status).toBe(200)
    expect(got.headers.get("content-type")).toBe("video/mp4")
    expect(bytesOf(got).equals(data)).toBe(true)
    const part = await send(download.url, { headers: { range: "bytes=100-199" } })
    expect(part.status).toBe(206)
    expect(bytesOf(part).equals(data.subarray(100, 200))).toBe(true)
  })

  it("the service's put, head, streamed read (whole and ranged) and remove", async () => {
    const key = freshKey("photo.png")
    const data = randomBytes(200_000)
    const result = await withStorage(gw, (s) =>
      Effect.gen(function*() {
        yield* s.put(key, data, "image/png")
        const info = yield* s.head(key)
        const whole = yield* Effect.flatMap(s.read(key), (o) => collect(Option.getOrThrow(o).body))
        const part = Option.getOrThrow(yield* s.read(key, { start: 70_000, end: 140_000 }))
        const partBytes = yield* collect(part.body)
        const tail = Option.getOrThrow(yield* s.read(key, { start: 199_990, end: 300_000 }))
        const tailBytes = yield* collect(tail.body)
        yield* s.remove(key)
        yield* s.remove(key)
        return { info, whole, part, partBytes, tailBytes, gone: yield* s.head(key), readGone: yield* s.read(key) }
      }))
    expect(result.info).toEqual(Option.some({ size: 200_000, contentType: "image/png" }))
    expect(result.whole.equals(data)).toBe(true)
    expect(result.part.size).toBe(200_000)
    expect(result.part.contentType).toBe("image/png")
    expect(result.partBytes.equals(data.subarray(70_000, 140_001))).toBe(true)
    expect(result.tailBytes.equals(data.subarray(199_990))).toBe(true)
    expect(result.gone).toEqual(Option.none())
    expect(result.readGone).toEqual(Option.none())
  })

  it("putStream streams a body into the bucket; a body that fails, comes short or runs long fails the put", async () => {
    const key = freshKey()
    const data = randomBytes(3_000_000)
    const chunks = Array.from({ length: 30 }, (_, i) => data.subarray(i * 100_000, (i + 1) * 100_000))
    const putStream = (body: Stream.Stream<Uint8Array, StorageError>, length = data.length) =>
      withStorage(gw, (s) =>
        s.putStream(key, body, length, "video/mp4").pipe(
          Effect.as("ok"),
          Effect.catchTag("StorageError", () => Effect.succeed("StorageError")),
          Effect.timeout("20 seconds")
        ))
    const broken = Stream.concat(
      Stream.fromIterable(chunks.slice(0, 5)),
      Stream.fail(new StorageError({ message: "x", fault: "unavailable" }))
    )
    // Each request is aborted mid-body. S3 stores nothing of an incomplete PUT; s3rver keeps what arrived
    // (an empty object when the body had not started), so here only the failure itself can be proven.
    expect(await putStream(broken)).toBe("StorageError")
    expect(await putStream(Stream.fromIterable(chunks.slice(0, 29)))).toBe("StorageError")
    expect(await putStream(Stream.fromIterable(chunks), data.length - 1)).toBe("StorageError")
    expect(await putStream(Stream.fromIterable(chunks))).toBe("ok")
    expect(await head(key)).toEqual(Option.some({ size: data.length, contentType: "video/mp4" }))
    const stored = await withStorage(gw, (s) => Effect.flatMap(s.read(key), (o) => collect(Option.getOrThrow(o).body)))
    expect(stored.equals(data)).toBe(true)
  })

  it("putFile streams a local file into the bucket; a file of another length than announced fails the put", async () => {
    const key = freshKey()
    const data = randomBytes(1_000_000)
    const source = sourceFile(gw, data)
    const putFile = (path: string, length = data.length) =>
      withStorage(gw, (s) =>
        s.putFile(key, path, length, "video/mp4").pipe(
          Effect.as("ok"),
          Effect.catchTag("StorageError", () => Effect.succeed("StorageError")),
          Effect.timeout("20 seconds")
        ))
    expect(await putFile(source, data.length + 1)).toBe("StorageError")
    expect(await putFile(source, data.length - 1)).toBe("StorageError")
    expect(await putFile(join(gw.dataDir, "no-such-file"))).toBe("StorageError")
    expect(await putFile(source)).toBe("ok")
    expect(await head(key)).toEqual(Option.some({ size: data.length, contentType: "video/mp4" }))
    const stored = await withStorage(gw, (s) => Effect.flatMap(s.read(key), (o) => collect(Option.getOrThrow(o).body)))
    expect(stored.equals(data)).toBe(true)
  })

  it("s3rver refuses a PUT of another Content-Type or length with 403, and nothing is stored", async () => {
    const key = freshKey()
    const data = randomBytes(1000)
    const { url } = await presignPut(key, "video/mp4", data.length)
    const longer = new Uint8Array(data.length + 1)
    longer.set(data)
    for (
      const reply of [
        await put(url, data, "video/quicktime"),
        await put(url, data),
        await put(url, longer, "video/mp4"),
        await put(url, data.subarray(0, 999), "video/mp4")
      ]
    ) {
      expect(reply.status).toBe(403)
      expect(s3Code(reply)).toBe("SignatureDoesNotMatch")
    }
    expect(await head(key)).toEqual(Option.none())
    expect((await put(url, data, "video/mp4")).status).toBe(200)
  })

  it("s3rver refuses a tampered, expired, retargeted or wrong-method URL with 403", async () => {
    const key = freshKey()
    const data = randomBytes(100)
    await withStorage(gw, (s) => s.put(key, data, "image/png"))
    const upload = await presignPut(freshKey(), "image/png", data.length)
    const download = await presignGet(key)
    const signature = new URL(download.url).searchParams.get("X-Amz-Signature")!
    const flipped = (signature[0] === "a" ? "b" : "a") + signature.slice(1)

    const tamperedGet = await send(withParam(download.url, "X-Amz-Signature", flipped))
    expect([tamperedGet.status, s3Code(tamperedGet)]).toEqual([403, "SignatureDoesNotMatch"])
    const longerGet = await send(withParam(download.url, "X-Amz-Expires", "3600"))
    expect([longerGet.status, s3Code(longerGet)]).toEqual([403, "SignatureDoesNotMatch"])

    const elsewhere = freshKey()
    const moved = await put(
      upload.url.replace(new URL(upload.url).pathname, `/${BUCKET}/${elsewhere}`),
      data,
      "image/png"
    )
    expect([moved.status, s3Code(moved)]).toEqual([403, "SignatureDoesNotMatch"])
    expect(await head(elsewhere)).toEqual(Option.none())

    const getOnPut = await send(upload.url)
    expect([getOnPut.status, s3Code(getOnPut)]).toEqual([403, "SignatureDoesNotMatch"])
    const putOnGet = await put(download.url, randomBytes(100), "image/png")
    expect([putOnGet.status, s3Code(putOnGet)]).toEqual([403, "SignatureDoesNotMatch"])

    const hourAgo = shiftedClock(-3600)
    const stale = await withStorage(gw, (s) => s.presignGet(key, { expiresInS: 60 }).pipe(Effect.withClock(hourAgo)))
    const expired = await send(stale.url)
    expect([expired.status, s3Code(expired)]).toEqual([403, "AccessDenied"])
    expect(bytesOf(expired).toString("utf8")).toContain("Request has expired")

    // The object itself was never touched.
    const intact = await send(download.url)
    expect(bytesOf(intact).equals(data)).toBe(true)
  })

  it("with S3 configured the service serves no /storage URLs and keeps no local objects", async () => {
    expectError(await raw(gw, "GET", "/storage/uploads~a~b.mp4?X-Expires=1&X-Signature=x"), 404, "not_found")
    expect(existsSync(join(gw.dataDir, "objects"))).toBe(false)
  })

  it("copy: a snapshot of the object, bytes and type, that later writes of the source do not change; false when there is none", async () => {
    const source = freshKey("source.png")
    const target = freshKey("pinned.png")
    const data = randomBytes(150_000)
    const result = await withStorage(gw, (s) =>
      Effect.gen(function*() {
        const missing = yield* s.copy(source, target)
        const noTarget = yield* s.head(target)
        yield* s.put(source, data, "image/png")
        const copied = yield* s.copy(source, target)
        // The source written again: the copy keeps what it was given.
        yield* s.put(source, data.subarray(0, 10), "image/jpeg")
        const info = yield* s.head(target)
        const bytes = yield* Effect.flatMap(s.read(target), (o) => collect(Option.getOrThrow(o).body))
        // Copying again replaces the target.
        const recopied = yield* s.copy(source, target)
        const replaced = yield* s.head(target)
        const invalid = yield* Effect.flip(s.copy(source, "../x"))
        return { missing, noTarget, copied, info, bytes, recopied, replaced, invalid }
      }))
    expect(result.missing).toBe(false)
    expect(result.noTarget).toEqual(Option.none())
    expect(result.copied).toBe(true)
    expect(result.info).toEqual(Option.some({ size: 150_000, contentType: "image/png" }))
    expect(result.bytes.equals(data)).toBe(true)
    expect(result.recopied).toBe(true)
    expect(result.replaced).toEqual(Option.some({ size: 10, contentType: "image/jpeg" }))
    expect(result.invalid._tag).toBe("StorageError")
  })

  it("refuses an invalid key before calling S3", async () => {
    const outcome = await withStorage(
      gw,
      (s) =>
        Effect.match(s.presignPut("../x", { contentType: "image/png", contentLength: 1, expiresInS: 60 }), {
          onFailure: (e) => e._tag,
          onSuccess: () => "ok"
        })
    )
    expect(outcome).toBe("StorageError")
  })
})
