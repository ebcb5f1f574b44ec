import { Chunk, Effect, Option, Stream } from "effect"
import { existsSync, readdirSync, readFileSync, writeFileSync } from "node:fs"
import { request } from "node:http"
import { connect } from "node:net"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { LocalObjectStore } from "../../src/storage/LocalObjectStorage.ts"
import { StorageError } from "../../src/storage/ObjectStorage.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { errorOf, expectError, raw } from "../support/http.ts"
import { bytesOf, randomBytes, send, shiftedClock, sourceFile, withParam, withStorage } from "../support/storage.ts"

let gw: TestGateway
beforeAll(async () => {
  gw = await startGateway()
})
afterAll(() => gw?.close())

/** URLs carry PUBLIC_BASE_URL; the test server listens on a port picked at start, so requests go there. */
const onGateway = (url: string, target: TestGateway = gw) => {
  const u = new URL(url)
  return target.url + u.pathname + u.search
}

const presignPut = (key: string, contentType: string, contentLength: number, expiresInS = 600) =>
  withStorage(gw, (s) => s.presignPut(key, { contentType, contentLength, expiresInS }))
const presignGet = (key: string, expiresInS = 600) => withStorage(gw, (s) => s.presignGet(key, { expiresInS }))
const head = (key: string) => withStorage(gw, (s) => s.head(key))
const put = (url: string, body: BodyInit, contentType?: string, method = "PUT") =>
  send(onGateway(url), { method, body, headers: contentType === undefined ? {} : { "content-type": contentType } })

let n = 0
const freshKey = (name = "clip.mp4") => `uploads/acct_test/up_${++n}/${name}`

/** Raw HTTP/1.1 over a socket: a Content-Length and a body that need not agree. Resolves with what came back. */
const rawPut = (url: string, headers: Record<string, string>, body: Uint8Array) =>
  new Promise<string>((resolve, reject) => {
    const u = new URL(onGateway(url))
    const socket = connect(Number(u.port), u.hostname)
    let answer = ""
    socket.on("data", (d) => (answer += d.toString("latin1")))
    socket.on("error", () => resolve(answer))
    socket.on("close", () => resolve(answer))
    socket.on("connect", () => {
      const head = [`PUT ${u.pathname}${u.search} HTTP/1.1`, `Host: ${u.host}`, "Connection: close"]
        .concat(Object.entries(headers).map(([k, v]) => `${k}: ${v}`))
        .join("\r\n")
      socket.write(head + "\r\n\r\n")
      socket.end(body)
    })
    setTimeout(() => reject(new Error("no answer")), 20_000).unref()
  })

const tempFiles = () => readdirSync(join(gw.dataDir, "objects", "~tmp"))

/** The server finishes a broken upload's clean-up after the connection is gone. */
const noTempFiles = () =>
  eventually(() => tempFiles().length === 0, "no temporary file left", { deadlineMs: 5_000, intervalMs: 50 })

describe(`local object storage over HTTP (${backend})`, () => {
  it("a pre-signed PUT stores the exact bytes; a pre-signed GET returns them", async () => {
    const key = freshKey()
    const data = randomBytes(300_000)
    const before = Math.floor(Date.now() / 1000)
    const upload = await presignPut(key, "video/mp4", data.length, 900)
    const after = Math.floor(Date.now() / 1000)
    const url = new URL(upload.url)
    expect(url.pathname).toBe(`/storage/${key.replaceAll("/", "~")}`)
    expect(url.searchParams.get("X-Expires")).toBe(String(upload.expiresAt))
    expect(url.searchParams.get("X-Signature")).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(upload.headers).toEqual({ "Content-Type": "video/mp4" })
    expect(upload.expiresAt).toBeGreaterThanOrEqual(before + 900)
    expect(upload.expiresAt).toBeLessThanOrEqual(after + 900)

    const stored = await put(upload.url, data, "video/mp4")
    expect(stored.status).toBe(200)
    expect(stored.headers.get("x-request-id")).toBeTruthy()
    expect(await head(key)).toEqual(Option.some({ size: data.length, contentType: "video/mp4" }))
    // The documented layout: the bytes under DATA_DIR/objects/<key>, the type beside them.
    expect(readFileSync(join(gw.dataDir, "objects", key)).equals(data)).toBe(true)
    expect(JSON.parse(readFileSync(join(gw.dataDir, "objects", `${key}~meta.json`), "utf8"))).toEqual({
      content_type: "video/mp4"
    })
    expect(tempFiles()).toEqual([])

    const download = await presignGet(key)
    const got = await send(onGateway(download.url))
    expect(got.status).toBe(200)
    expect(got.headers.get("content-type")).toBe("video/mp4")
    expect(got.headers.get("content-length")).toBe(String(data.length))
    expect(got.headers.get("accept-ranges")).toBe("bytes")
    expect(got.headers.get("x-content-type-options")).toBe("nosniff")
    expect(bytesOf(got).equals(data)).toBe(true)
  })

  it("a PUT with another Content-Type, or none, is refused with 403 and stores nothing", async () => {
    const key = freshKey()
    const data = randomBytes(1000)
    const { url } = await presignPut(key, "video/mp4", data.length)
    expectError(await put(url, data, "video/quicktime"), 403, "invalid_signature", "permission_error")
    expectError(await put(url, data, "video/mp4; charset=utf-8"), 403, "invalid_signature")
    expectError(await put(url, data), 403, "invalid_signature")
    expect(await head(key)).toEqual(Option.none())
    expect(await put(url, data, "video/mp4")).toMatchObject({ status: 200 })
  })

  it("a body of another length is refused with 403 before it is read, and nothing is stored", async () => {
    const key = freshKey()
    const data = randomBytes(1000)
    const { url } = await presignPut(key, "video/mp4", data.length)
    const longer = new Uint8Array(data.length + 1)
    longer.set(data)
    expectError(await put(url, longer, "video/mp4"), 403, "invalid_signature")
    expectError(await put(url, data.subarray(0, 999), "video/mp4"), 403, "invalid_signature")
    expectError(await put(url, new Uint8Array(0), "video/mp4"), 403, "invalid_signature")
    expect(await head(key)).toEqual(Option.none())
  })

  it("a chunked upload (no Content-Length) is refused with 403", async () => {
    const key = freshKey()
    const data = randomBytes(1000)
    const { url } = await presignPut(key, "video/mp4", data.length)
    const u = new URL(onGateway(url))
    const status = await new Promise<number>((resolve, reject) => {
      const req = request({
        host: u.hostname,
        port: u.port,
        path: u.pathname + u.search,
        method: "PUT",
        headers: { "content-type": "video/mp4", "transfer-encoding": "chunked" }
      }, (res) => {
        res.resume()
        resolve(res.statusCode!)
      })
      req.on("error", reject)
      req.write(data.subarray(0, 500))
      req.end(data.subarray(500))
    })
    expect(status).toBe(403)
    expect(await head(key)).toEqual(Option.none())
  })

  it("a body that breaks off before its signed Content-Length is never stored, and leaves no temp file", async () => {
    const key = freshKey()
    const data = randomBytes(200_000)
    const { url } = await presignPut(key, "video/mp4", data.length)
    const answer = await rawPut(
      url,
      { "Content-Type": "video/mp4", "Content-Length": String(data.length) },
      data.subarray(0, 150_000)
    )
    expect(answer).not.toMatch(/^HTTP\/1\.1 2/)
    expect(await head(key)).toEqual(Option.none())
    await noTempFiles()
    expect(existsSync(join(gw.dataDir, "objects", key))).toBe(false)
  })

  it("bytes sent past the signed Content-Length never become part of the object", async () => {
    const key = freshKey()
    const data = randomBytes(5000)
    const { url } = await presignPut(key, "video/mp4", data.length)
    const trailing = new TextEncoder().encode("these bytes are not the body")
    const sent = new Uint8Array(data.length + trailing.length)
    sent.set(data)
    sent.set(trailing, data.length)
    // HTTP framing ends the body at Content-Length; Node answers the rest, a malformed next
    // request, with 400 and drops the connection, which may or may not cut the upload short.
    const answer = await rawPut(url, { "Content-Type": "video/mp4", "Content-Length": String(data.length) }, sent)
    expect(answer).toMatch(/^HTTP\/1\.1 (200|400)/)
    await noTempFiles()
    const stored = await head(key)
    if (Option.isSome(stored)) {
      expect(stored.value).toEqual({ size: data.length, contentType: "video/mp4" })
      expect(readFileSync(join(gw.dataDir, "objects", key)).equals(data)).toBe(true)
    }
  })

  it("an expired URL is refused with 403 url_expired, for PUT and for GET", async () => {
    const key = freshKey()
    const data = randomBytes(100)
    await withStorage(gw, (s) => s.put(key, data, "image/png"))
    // Signed an hour ago for one minute.
    const hourAgo = shiftedClock(-3600)
    const upload = await withStorage(
      gw,
      (s) =>
        s.presignPut(freshKey(), { contentType: "image/png", contentLength: 100, expiresInS: 60 }).pipe(
          Effect.withClock(hourAgo)
        )
    )
    const download = await withStorage(gw, (s) => s.presignGet(key, { expiresInS: 60 }).pipe(Effect.withClock(hourAgo)))
    expect(upload.expiresAt).toBeLessThan(Date.now() / 1000)
    expectError(await put(upload.url, data, "image/png"), 403, "url_expired", "permission_error")
    expectError(await send(onGateway(download.url)), 403, "url_expired")
    // The same object through a fresh URL: the refusal was the expiry, nothing else.
    expect((await send(onGateway((await presignGet(key)).url))).status).toBe(200)
  })

  it("a URL with an altered signature, expiry or object is refused with 403", async () => {
    const key = freshKey()
    const other = freshKey()
    const data = randomBytes(100)
    await withStorage(gw, (s) => Effect.zipRight(s.put(key, data, "image/png"), s.put(other, data, "image/png")))
    const { url } = await presignGet(key)
    const signature = new URL(url).searchParams.get("X-Signature")!
    const flipped = (signature[0] === "A" ? "B" : "A") + signature.slice(1)
    const expires = Number(new URL(url).searchParams.get("X-Expires"))
    const tampered = [
      withParam(url, "X-Signature", flipped),
      withParam(url, "X-Signature", signature.slice(0, -1)),
      withParam(url, "X-Signature", undefined),
      withParam(url, "X-Expires", String(expires + 3600)),
      withParam(url, "X-Expires", undefined),
      withParam(url, "X-Expires", `${expires}.0`),
      url + "&X-Signature=" + signature,
      url.replace(key.replaceAll("/", "~"), other.replaceAll("/", "~"))
    ]
    for (const t of tampered) expectError(await send(onGateway(t)), 403, "invalid_signature", "permission_error")
    expect((await send(onGateway(url))).status).toBe(200)
  })

  it("a PUT URL does not download, a GET URL does not upload, and a PUT URL writes only its own key", async () => {
    const key = freshKey()
    const data = randomBytes(100)
    await withStorage(gw, (s) => s.put(key, data, "image/png"))
    const upload = await presignPut(key, "image/png", data.length)
    expectError(await send(onGateway(upload.url)), 403, "invalid_signature")
    expect((await send(onGateway(upload.url), { method: "HEAD" })).status).toBe(403)
    const download = await presignGet(key)
    expectError(await put(download.url, randomBytes(100), "image/png"), 403, "invalid_signature")
    expectError(await put(download.url, randomBytes(100)), 403, "invalid_signature")

    const elsewhere = freshKey()
    const moved = upload.url.replace(key.replaceAll("/", "~"), elsewhere.replaceAll("/", "~"))
    expectError(await put(moved, randomBytes(100), "image/png"), 403, "invalid_signature")
    expect(await head(elsewhere)).toEqual(Option.none())
    const unchanged = await send(onGateway(download.url))
    expect(bytesOf(unchanged).equals(data)).toBe(true)
  })

  describe("ranges and HEAD", () => {
    const key = "results/acct_test/asset_ranges/video.mp4"
    const data = randomBytes(1000)
    let url: string
    beforeAll(async () => {
      await withStorage(gw, (s) => s.put(key, data, "video/mp4"))
      url = onGateway((await presignGet(key)).url)
    })
    const ranged = (range: string, method = "GET") => send(url, { method, headers: { range } })

    it.each([
      ["bytes=10-19", 10, 19],
      ["bytes=990-", 990, 999],
      ["bytes=-5", 995, 999],
      ["bytes=995-5000", 995, 999],
      ["bytes=-5000", 0, 999],
      ["bytes=0-0", 0, 0]
    ])("%s → 206 with bytes %i-%i", async (range, start, end) => {
      const reply = await ranged(range)
      expect(reply.status).toBe(206)
      expect(reply.headers.get("content-range")).toBe(`bytes ${start}-${end}/1000`)
      expect(reply.headers.get("content-length")).toBe(String(end - start + 1))
      expect(reply.headers.get("content-type")).toBe("video/mp4")
      expect(bytesOf(reply).equals(data.subarray(start, end + 1))).toBe(true)
    })

    it.each(["bytes=1000-", "bytes=5000-6000", "bytes=-0"])(
      "%s → 416 with Content-Range: bytes */1000",
      async (range) => {
        const reply = await ranged(range)
        expectError(reply, 416, "range_not_satisfiable", "invalid_request_error")
        expect(reply.headers.get("content-range")).toBe("bytes */1000")
      }
    )

    it.each(["bytes=0-1,5-6", "items=0-1", "bytes=20-10", "bytes=-", "nonsense"])(
      "%s is ignored: 200 with the whole object",
      async (range) => {
        const reply = await ranged(range)
        expect(reply.status).toBe(200)
        expect(reply.headers.get("content-range")).toBeNull()
        expect(bytesOf(reply).equals(data)).toBe(true)
      }
    )

    it("a Range with If-Range gets the whole object (there is no validator to compare)", async () => {
      const reply = await send(url, { headers: { range: "bytes=0-9", "if-range": "\"some-etag\"" } })
      expect(reply.status).toBe(200)
      expect((reply.body as Uint8Array).length).toBe(1000)
    })

    it("HEAD answers the GET's headers without a body", async () => {
      const whole = await send(url, { method: "HEAD" })
      expect(whole.status).toBe(200)
      expect(whole.headers.get("content-length")).toBe("1000")
      expect(whole.headers.get("content-type")).toBe("video/mp4")
      expect(whole.headers.get("accept-ranges")).toBe("bytes")
      expect((whole.body as Uint8Array).length).toBe(0)
      const part = await ranged("bytes=100-199", "HEAD")
      expect(part.status).toBe(206)
      expect(part.headers.get("content-range")).toBe("bytes 100-199/1000")
      expect(part.headers.get("content-length")).toBe("100")
      expect((part.body as Uint8Array).length).toBe(0)
    })

    it("an empty object is served with Content-Length 0; any range of it is unsatisfiable", async () => {
      const empty = "results/acct_test/asset_empty/empty.bin"
      await withStorage(gw, (s) => s.put(empty, new Uint8Array(0), "application/octet-stream"))
      const emptyUrl = onGateway((await presignGet(empty)).url)
      const reply = await send(emptyUrl)
      expect(reply.status).toBe(200)
      expect(reply.headers.get("content-length")).toBe("0")
      expect((reply.body as Uint8Array).length).toBe(0)
      expectError(await send(emptyUrl, { headers: { range: "bytes=0-" } }), 416, "range_not_satisfiable")
    })
  })

  it("a valid URL for an object that does not exist → 404 object_not_found with the spec's body", async () => {
    const { url } = await presignGet(freshKey())
    const reply = await send(onGateway(url), { headers: { "x-request-id": "req-storage-404" } })
    expectError(reply, 404, "object_not_found", "not_found_error")
    expect(errorOf(reply.body)?.request_id).toBe("req-storage-404")
  })

  it("other methods → 405 with Allow; a key with '/' in the path → 404", async () => {
    const { url } = await presignGet(freshKey())
    const path = new URL(url).pathname
    const reply = await raw(gw, "DELETE", path)
    expectError(reply, 405, "method_not_allowed")
    expect(reply.headers.get("allow")).toBe("GET, PUT")
    expectError(await raw(gw, "GET", "/storage/uploads/a/b"), 404, "not_found")
  })

  it("another replica given the same STORAGE_SIGNING_KEY accepts the URLs; the key is kept under DATA_DIR", async () => {
    const signingKey = readFileSync(join(gw.dataDir, "storage-signing-key"), "utf8").trim()
    expect(signingKey.length).toBeGreaterThanOrEqual(32)
    const peer = await startGateway({ STORAGE_SIGNING_KEY: signingKey })
    try {
      expect(existsSync(join(peer.dataDir, "storage-signing-key"))).toBe(false)
      const key = freshKey()
      const data = randomBytes(64)
      const upload = await presignPut(key, "image/webp", data.length)
      // The peer has its own DATA_DIR: the upload lands there, signed by this gateway.
      expect(
        (await send(onGateway(upload.url, peer), {
          method: "PUT",
          body: data,
          headers: { "content-type": "image/webp" }
        })).status
      ).toBe(200)
      expect(await withStorage(peer, (s) => s.head(key))).toEqual(Option.some({ size: 64, contentType: "image/webp" }))
      expect(await head(key)).toEqual(Option.none())
    } finally {
      await peer.close()
    }
  })
})

describe(`local object storage service (${backend})`, () => {
  /** The error tag an attempt failed with, or "ok". */
  const outcome = <A>(effect: Effect.Effect<A, { readonly _tag: string }>) =>
    Effect.match(effect, { onFailure: (e) => e._tag, onSuccess: () => "ok" })
  const collect = (body: Stream.Stream<Uint8Array, unknown>) =>
    Effect.map(Stream.runCollect(body), (chunks) => Buffer.concat(Chunk.toReadonlyArray(chunks)))

  it("put, head, read (whole and ranged), overwrite and remove", async () => {
    const key = freshKey("photo.png")
    const data = randomBytes(200_000)
    const result = await withStorage(gw, (s) =>
      Effect.gen(function*() {
        yield* s.put(key, data, "image/png")
        const info = yield* s.head(key)
        const whole = yield* Effect.flatMap(s.read(key), (o) => collect(Option.getOrThrow(o).body))
        const part = Option.getOrThrow(yield* s.read(key, { start: 70_000, end: 140_000 }))
        const partBytes = yield* collect(part.body)
        yield* s.put(key, data.subarray(0, 10), "image/jpeg")
        const replaced = yield* s.head(key)
        yield* s.remove(key)
        yield* s.remove(key)
        return { info, whole, part, partBytes, replaced, gone: yield* s.head(key), readGone: yield* s.read(key) }
      }))
    expect(result.info).toEqual(Option.some({ size: 200_000, contentType: "image/png" }))
    expect(result.whole.equals(data)).toBe(true)
    expect(result.part.size).toBe(200_000)
    expect(result.partBytes.equals(data.subarray(70_000, 140_001))).toBe(true)
    expect(result.replaced).toEqual(Option.some({ size: 10, contentType: "image/jpeg" }))
    expect(result.gone).toEqual(Option.none())
    expect(result.readGone).toEqual(Option.none())
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
    // Nothing is left in the temporary directory.
    expect(tempFiles()).toEqual([])
  })

  it("an upload stream that ends short of, or runs past, its length is refused and not stored", async () => {
    const key = freshKey()
    const receive = (chunks: Array<Uint8Array>) =>
      gw.runtime.runPromise(
        Effect.flatMap(LocalObjectStore, (local) =>
          outcome(Option.getOrThrow(local).receive(key, "image/png", 10, Stream.fromIterable(chunks))))
      )
    expect(await receive([randomBytes(4), randomBytes(5)])).toBe("BodyLengthMismatch")
    expect(await receive([randomBytes(6), randomBytes(5)])).toBe("BodyLengthMismatch")
    expect(await head(key)).toEqual(Option.none())
    expect(tempFiles()).toEqual([])
    expect(await receive([randomBytes(6), randomBytes(4)])).toBe("ok")
    expect(await head(key)).toEqual(Option.some({ size: 10, contentType: "image/png" }))
  })

  it("putStream stores a body as it is read, only when it holds exactly the announced length", async () => {
    const key = freshKey()
    const data = randomBytes(300_000)
    const chunks = [data.subarray(0, 100_000), data.subarray(100_000, 250_000), data.subarray(250_000)]
    const putStream = (body: Stream.Stream<Uint8Array, StorageError>, length = data.length) =>
      withStorage(gw, (s) => outcome(s.putStream(key, body, length, "video/mp4")))
    expect(await putStream(Stream.fromIterable(chunks.slice(0, 2)))).toBe("StorageError")
    expect(await putStream(Stream.fromIterable(chunks), data.length - 1)).toBe("StorageError")
    expect(
      await putStream(
        Stream.concat(
          Stream.fromIterable(chunks.slice(0, 1)),
          Stream.fail(new StorageError({ message: "broke", fault: "unavailable" }))
        )
      )
    ).toBe("StorageError")
    expect(await head(key)).toEqual(Option.none())
    expect(tempFiles()).toEqual([])
    expect(await putStream(Stream.fromIterable(chunks))).toBe("ok")
    expect(await head(key)).toEqual(Option.some({ size: data.length, contentType: "video/mp4" }))
    const stored = await withStorage(
      gw,
      (s) => Effect.flatMap(s.read(key), (o) => Stream.runCollect(Option.getOrThrow(o).body))
    )
    expect(Buffer.concat(Chunk.toReadonlyArray(stored)).equals(data)).toBe(true)
  })

  it("putFile copies a local file into place, only when it holds exactly the announced length", async () => {
    const key = freshKey()
    const data = randomBytes(300_000)
    const source = sourceFile(gw, data)
    const putFile = (path: string, length = data.length) =>
      withStorage(gw, (s) => outcome(s.putFile(key, path, length, "video/mp4")))
    expect(await putFile(source, data.length - 1)).toBe("StorageError")
    expect(await putFile(source, data.length + 1)).toBe("StorageError")
    expect(await putFile(join(gw.dataDir, "no-such-file"))).toBe("StorageError")
    expect(await head(key)).toEqual(Option.none())
    expect(tempFiles()).toEqual([])
    expect(await putFile(source)).toBe("ok")
    expect(tempFiles()).toEqual([])
    // A copy: the source is left as it was, and writing it afterwards does not change the object.
    expect(readFileSync(source).equals(data)).toBe(true)
    writeFileSync(source, randomBytes(10))
    expect(await head(key)).toEqual(Option.some({ size: data.length, contentType: "video/mp4" }))
    const stored = await withStorage(
      gw,
      (s) => Effect.flatMap(s.read(key), (o) => Stream.runCollect(Option.getOrThrow(o).body))
    )
    expect(Buffer.concat(Chunk.toReadonlyArray(stored)).equals(data)).toBe(true)
  })

  it.each(["", "../escape", "a/../b", "a/./b", "a//b", "/a", "a/", "a b", "a~b", "a\\b", "ä", "x".repeat(1025)])(
    "refuses the key %j",
    async (key) => {
      const outcomes = await withStorage(gw, (s) =>
        Effect.all([
          outcome(s.put(key, new Uint8Array(1), "image/png")),
          outcome(s.head(key)),
          outcome(s.read(key)),
          outcome(s.remove(key)),
          outcome(s.presignGet(key, { expiresInS: 60 })),
          outcome(s.presignPut(key, { contentType: "image/png", contentLength: 1, expiresInS: 60 }))
        ]))
      expect(outcomes).toEqual(Array(6).fill("StorageError"))
    }
  )

  it("refuses a bad content type, length or lifetime when presigning, and a range outside the object", async () => {
    const key = freshKey()
    await withStorage(gw, (s) => s.put(key, randomBytes(10), "image/png"))
    const attempts = await withStorage(gw, (s) =>
      Effect.all([
        outcome(s.presignPut(key, { contentType: "image/png\nx: y", contentLength: 1, expiresInS: 60 })),
        outcome(s.presignPut(key, { contentType: "", contentLength: 1, expiresInS: 60 })),
        outcome(s.presignPut(key, { contentType: "image/png", contentLength: -1, expiresInS: 60 })),
        outcome(s.presignPut(key, { contentType: "image/png", contentLength: 1.5, expiresInS: 60 })),
        outcome(s.presignPut(key, { contentType: "image/png", contentLength: 1, expiresInS: 0 })),
        outcome(s.presignGet(key, { expiresInS: 8 * 24 * 3600 })),
        outcome(s.read(key, { start: 10, end: 20 })),
        // The bounds themselves are accepted.
        outcome(s.presignPut(key, { contentType: "image/png; q=1", contentLength: 0, expiresInS: 7 * 24 * 3600 })),
        outcome(s.read(key, { start: 9, end: 20 }))
      ]))
    expect(attempts).toEqual([...Array(7).fill("StorageError"), "ok", "ok"])
  })
})
