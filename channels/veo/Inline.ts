import { Chunk, Effect, Stream } from "effect"

/**
 * Inline results without holding them (docs/adapters/veo.md, Results and
 * expiry): Vertex answers a finished operation with each video as a base64
 * string inside the JSON (`bytesBase64Encoded`, 20 MB of video is 27 MB of
 * text). Parsing that answer would hold the text, the parsed string and the
 * decoded bytes at once, and keep the base64 in `task_attempts`.
 *
 * Instead both steps read the answer as a byte stream through one scanner
 * that knows JSON strings only:
 * - `poll` keeps the document with every string of `LONG_STRING` bytes or
 *   more replaced by a marker `"veo-inline:N"` (N counts those strings in
 *   order), and parses that small text; the state says "result N inline".
 * - `fetchResult` asks for the operation again and decodes string N from
 *   base64 as it streams by, chunk by chunk, never keeping more than one
 *   network chunk and three base64 characters of it.
 * The only whole copy is the decoded video the engine collects.
 */

export const LONG_STRING = 4096
export const MARKER = "veo-inline:"

const QUOTE = 0x22
const BACKSLASH = 0x5c
const SLASH = 0x2f

const concat = (parts: ReadonlyArray<Uint8Array>) => {
  if (parts.length === 1) return parts[0]!
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0))
  let at = 0
  for (const p of parts) {
    out.set(p, at)
    at += p.byteLength
  }
  return out
}

const encoder = new TextEncoder()

/**
 * Splits a JSON byte stream into the document without its long strings
 * (`onJson`) and the contents of those strings (`onLong`, JSON escapes
 * resolved as base64 needs: `\/` is `/`, any other escape is dropped).
 */
export class LongStrings {
  private inString = false
  private escape = false
  private long = false
  private longEscape = false
  private pending: Array<Uint8Array> = []
  private pendingBytes = 0
  /** Long strings seen so far (the index of the current one while inside it). */
  count = 0

  constructor(
    private readonly onJson: (bytes: Uint8Array) => void,
    private readonly onLong: (index: number, bytes: Uint8Array) => void
  ) {}

  push(chunk: Uint8Array) {
    let i = 0
    while (i < chunk.length) {
      if (!this.inString) {
        const q = chunk.indexOf(QUOTE, i)
        if (q < 0) {
          this.onJson(chunk.subarray(i))
          return
        }
        if (q > i) this.onJson(chunk.subarray(i, q))
        this.inString = true
        this.escape = false
        this.long = false
        this.longEscape = false
        this.pending = []
        this.pendingBytes = 0
        i = q + 1
        continue
      }
      let k = i
      for (; k < chunk.length; k++) {
        const b = chunk[k]!
        if (this.escape) this.escape = false
        else if (b === BACKSLASH) this.escape = true
        else if (b === QUOTE) break
      }
      if (k > i) this.content(chunk.subarray(i, k))
      if (k < chunk.length) {
        this.close()
        i = k + 1
      } else {
        i = k
      }
    }
  }

  private content(piece: Uint8Array) {
    if (this.long) return this.emitLong(piece)
    this.pending.push(piece.slice())
    this.pendingBytes += piece.byteLength
    if (this.pendingBytes >= LONG_STRING) {
      this.long = true
      const held = concat(this.pending)
      this.pending = []
      this.emitLong(held)
    }
  }

  private emitLong(piece: Uint8Array) {
    if (!this.longEscape && piece.indexOf(BACKSLASH) < 0) return this.onLong(this.count, piece)
    const out = new Uint8Array(piece.byteLength)
    let n = 0
    for (const b of piece) {
      if (this.longEscape) {
        this.longEscape = false
        if (b === SLASH) out[n++] = SLASH
      } else if (b === BACKSLASH) this.longEscape = true
      else out[n++] = b
    }
    this.onLong(this.count, out.subarray(0, n))
  }

  private close() {
    this.inString = false
    if (this.long) {
      this.onJson(encoder.encode(`"${MARKER}${this.count}"`))
      this.count++
    } else {
      this.onJson(concat([new Uint8Array([QUOTE]), ...this.pending, new Uint8Array([QUOTE])]))
    }
    this.pending = []
    this.pendingBytes = 0
  }
}

/**
 * The text of an answer with its long strings replaced by markers, and
 * whether any were; the caller parses it (small whatever the videos weigh).
 */
export const sanitizedText = <E, R>(bytes: Stream.Stream<Uint8Array, E, R>) =>
  Effect.suspend(() => {
    const kept: Array<Uint8Array> = []
    const scanner = new LongStrings((b) => kept.push(b.slice()), () => {})
    return Stream.runForEach(bytes, (chunk) => Effect.sync(() => scanner.push(chunk))).pipe(
      Effect.map(() => new TextDecoder().decode(concat(kept)))
    )
  })

const ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
const SEXTET = new Int8Array(256).fill(-1)
for (let i = 0; i < 64; i++) SEXTET[ALPHABET.charCodeAt(i)] = i
SEXTET["-".charCodeAt(0)] = 62
SEXTET["_".charCodeAt(0)] = 63

/** A base64 decoder fed in pieces of any length; padding, whitespace and anything outside the alphabet are skipped. */
export class Base64Stream {
  private carry = 0
  private carried = 0

  push(chars: Uint8Array): Uint8Array {
    const out = new Uint8Array(Math.floor(((this.carried + chars.length) * 3) / 4))
    let n = 0
    let acc = this.carry
    let bits = this.carried * 6
    for (const c of chars) {
      const v = SEXTET[c]!
      if (v < 0) continue
      acc = (acc << 6) | v
      bits += 6
      if (bits >= 24) {
        out[n++] = (acc >> 16) & 0xff
        out[n++] = (acc >> 8) & 0xff
        out[n++] = acc & 0xff
        acc = 0
        bits = 0
      }
    }
    this.carry = acc
    this.carried = bits / 6
    return out.subarray(0, n)
  }

  /** The bytes of a final, unpadded group. */
  end(): Uint8Array {
    const { carry, carried } = this
    this.carry = this.carried = 0
    if (carried === 2) return new Uint8Array([(carry >> 4) & 0xff])
    if (carried === 3) return new Uint8Array([(carry >> 10) & 0xff, (carry >> 2) & 0xff])
    return new Uint8Array(0)
  }
}

/**
 * The bytes of long string `index` of a JSON answer, decoded from base64 as
 * the answer streams; `missing` when the answer ends without it.
 */
export const inlineBytes = <E, R>(bytes: Stream.Stream<Uint8Array, E, R>, index: number, missing: () => E) =>
  Stream.suspend(() => {
    let found = false
    const decoder = new Base64Stream()
    let out: Array<Uint8Array> = []
    const scanner = new LongStrings(() => {}, (i, chars) => {
      if (i !== index) return
      found = true
      const decoded = decoder.push(chars)
      if (decoded.byteLength > 0) out.push(decoded)
    })
    const decoded = bytes.pipe(
      Stream.mapConcatChunk((chunk) => {
        if (scanner.count > index) return Chunk.empty()
        scanner.push(chunk)
        const ready = out
        out = []
        return Chunk.unsafeFromArray(ready)
      })
    )
    return Stream.concat(
      decoded,
      Stream.suspend(() => found ? Stream.make(decoder.end()) : Stream.fail(missing()))
    ).pipe(Stream.filter((b) => b.byteLength > 0))
  })
