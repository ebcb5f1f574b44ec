// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import { Chunk, Effect, Stream } from "effect"
import { createHash } from "node:crypto"
import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"
import { describe, expect, it } from "vitest"
import { inlineBytes, LONG_STRING, MARKER, sanitizedText } from "../../channels/veo/Inline.ts"

/**
 * The veo adapter's inline results (channels/veo/Inline.ts): a Vertex
 * answer carrying videos as base64 strings is read as a stream, the poll
 * keeps only the small document, and the result is decoded as it streams,
 * so a 20 MB video never exists as a 27 MB string, a parsed object or a
 * second copy of its bytes.
 */

const enc = new TextEncoder()
const bytesOf = (n: number, seed: number) => {
  const out = new Uint8Array(n)
  let x = seed
  for (let i = 0; i < n; i++) {
    x = (x * 1103515245 + 12345) >>> 0
    out[i] = x >>> 24
  }
  return out
}
const split = (bytes: Uint8Array, size: number) => {
  const parts: Array<Uint8Array> = []
  for (let i = 0; i < bytes.length; i += size) parts.push(bytes.subarray(i, i + size))
  return Stream.fromIterable(parts)
}
const collect = <E>(s: Stream.Stream<Uint8Array, E>) =>
  Effect.runPromise(Stream.runCollect(s)).then((c) => Buffer.concat(Chunk.toReadonlyArray(c)))

describe("veo inline results", () => {
  const video0 = bytesOf(50_000, 1)
  const video1 = bytesOf(9_001, 2)
  // Two videos, one written with JSON's optional `\/` escapes, and a short string that stays.
  const answer = enc.encode(
    `{"name":"projects/p/operations/1","done":true,"response":{"videos":[` +
      `{"bytesBase64Encoded":"${
        Buffer.from(video0).toString("base64").replaceAll("/", "\\/")
      }","mimeType":"video/mp4"},` +
      `{"mimeType":"video/mp4","bytesBase64Encoded":"${
        Buffer.from(video1).toString("base64")
      }"}],"note":"a \\"quoted\\" word"}}`
  )

  it("the poll keeps the document with markers; each video decodes exactly, whatever the chunk sizes", async () => {
    for (const size of [1, 3, 7, 4096, 65_536, answer.length]) {
      const text = await Effect.runPromise(sanitizedText(split(answer, size)))
      expect(JSON.parse(text)).toEqual({
        name: "projects/p/operations/1",
        done: true,
        response: {
          videos: [
            { bytesBase64Encoded: `${MARKER}0`, mimeType: "video/mp4" },
            { mimeType: "video/mp4", bytesBase64Encoded: `${MARKER}1` }
          ],
          note: "a \"quoted\" word"
        }
      })
      expect(await collect(inlineBytes(split(answer, size), 0, () => "missing"))).toEqual(Buffer.from(video0))
      expect(await collect(inlineBytes(split(answer, size), 1, () => "missing"))).toEqual(Buffer.from(video1))
    }
    await expect(collect(inlineBytes(split(answer, 100), 2, () => "missing"))).rejects.toThrow()
    // Strings under the threshold are left as they are.
    expect(LONG_STRING).toBeLessThan(9_001)
  })

  it(
    "a 20 MB video in a 27 MB answer: the poll keeps a few hundred bytes, the decode holds no more than a chunk",
    async () => {
      setFlagsFromString("--expose_gc")
      const gc = runInNewContext("gc") as () => void
      const PIECE = 48 * 1024 // 64 KiB of base64 per network chunk
      const COUNT = Math.ceil((20 * 1024 * 1024) / PIECE)
      const RAW = COUNT * PIECE
      const head = enc.encode(
        `{"name":"projects/p/operations/2","done":true,"response":{"videos":[{"bytesBase64Encoded":"`
      )
      const tail = enc.encode(`","mimeType":"video/mp4"}]}}`)
      const want = createHash("sha256")
      // The answer is made chunk by chunk as it is read, like a socket's: the test holds none of it.
      const answer = () =>
        Stream.concat(
          Stream.make(head),
          Stream.range(0, COUNT - 1).pipe(
            Stream.rechunk(1),
            Stream.map((i) => enc.encode(Buffer.from(bytesOf(PIECE, i + 7)).toString("base64")))
          )
        ).pipe(Stream.concat(Stream.make(tail)))
      for (let i = 0; i < COUNT; i++) want.update(bytesOf(PIECE, i + 7))

      const text = await Effect.runPromise(sanitizedText(answer()))
      expect(text.length).toBeLessThan(200)
      expect(JSON.parse(text).response.videos[0].bytesBase64Encoded).toBe(`${MARKER}0`)

      gc()
      const baseline = process.memoryUsage()
      let peak = 0
      let last = 0
      let largest = 0
      let total = 0
      let n = 0
      const got = createHash("sha256")
      await Effect.runPromise(
        Stream.runForEach(inlineBytes(answer(), 0, () => "missing"), (chunk) =>
          Effect.sync(() => {
            got.update(chunk)
            total += chunk.byteLength
            largest = Math.max(largest, chunk.byteLength)
            if (++n % 40 === 0) {
              // Twice: a first full GC may leave freed external buffers for the next one to release.
              gc()
              gc()
              const m = process.memoryUsage()
              peak = Math.max(peak, m.heapUsed + m.arrayBuffers - baseline.heapUsed - baseline.arrayBuffers)
              last = m.heapUsed + m.arrayBuffers - baseline.heapUsed - baseline.arrayBuffers
            }
          }))
      )
      expect(total).toBe(RAW)
      expect(got.digest("hex")).toBe(want.digest("hex"))
      // By construction: every decoded piece is at most one network chunk's worth.
      expect(largest).toBeLessThanOrEqual(PIECE)
      // Measured after full GCs every 40 chunks: the heap stays flat and what stays allocated never
      // reaches half a copy of the video (Node releases freed external buffers lazily, hence the peaks),
      // and at the end less than a fifth of it (one loaded CI run kept 3.7 MB: buffers not yet released).
      expect(peak).toBeLessThan(10 * 1024 * 1024)
      expect(last).toBeLessThan(4 * 1024 * 1024)
    },
    60_000
  )
})
