// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import { NodeContext } from "@effect/platform-node"
import { Cause, Effect, Exit, Layer, ManagedRuntime, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type Inspection, MediaInspector } from "../../src/media/MediaInspector.ts"
import { MediaToolsLive } from "../../src/runtime/node/MediaTools.ts"
import { makeAudio, makeImage, makeVideo } from "../support/uploads.ts"

/**
 * 1,000 random, truncated and mutated media files through the inspector that
 * confirms uploads and checks fetched references: every one must end with
 * an Inspection or a typed InspectError (no defect, no hang), and no message
 * may leak a temporary path or the tool. Inputs come from a seeded PRNG, so a
 * failure names a reproducible case.
 */

const runtime = ManagedRuntime.make(
  MediaInspector.layer.pipe(Layer.provide(MediaToolsLive), Layer.provide(NodeContext.layer))
)
afterAll(() => runtime.dispose())

/** mulberry32: small, fast, and the same sequence for the same seed. */
const prng = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = seed
  t = Math.imul(t ^ (t >>> 15), t | 1)
  t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}
const random = prng(20261122)
const int = (n: number) => Math.floor(random() * n)
const noise = (n: number) => Uint8Array.from({ length: n }, () => int(256))

const seeds: Record<string, Uint8Array> = {}
beforeAll(async () => {
  const [mp4, mov, wav, mp3, png, jpg, webp] = await Promise.all([
    makeVideo(3, { audio: true }),
    makeVideo(3, { container: "mov" }),
    makeAudio("wav", 2),
    makeAudio("mp3", 2),
    makeImage("png"),
    makeImage("jpg"),
    makeImage("webp")
  ])
  Object.assign(seeds, { mp4, mov, wav, mp3, png, jpg, webp })
})

type Outcome =
  | { readonly _tag: "ok"; readonly inspection: Inspection }
  | { readonly _tag: "refused"; readonly reason: string; readonly message: string }
  | { readonly _tag: "hang" }
  | { readonly _tag: "defect"; readonly cause: string }

const inspect = (bytes: Uint8Array): Promise<Outcome> =>
  runtime.runPromise(
    Effect.flatMap(MediaInspector, (inspector) => inspector.inspectBytes(bytes)).pipe(
      // The prober's own time-out is 30 s; well past it, the run is a hang.
      Effect.timeout("45 seconds"),
      Effect.exit,
      Effect.map((exit): Outcome => {
        if (Exit.isSuccess(exit)) return { _tag: "ok", inspection: exit.value }
        const failure = Cause.failureOption(exit.cause)
        if (Option.isSome(failure)) {
          const e = failure.value
          return e._tag === "TimeoutException"
            ? { _tag: "hang" }
            : { _tag: "refused", reason: e.reason, message: e.message }
        }
        return { _tag: "defect", cause: Cause.pretty(exit.cause) }
      })
    )
  )

describe("media inspector fuzz", () => {
  it("the untouched seeds are read as what they are", async () => {
    const expected: Record<string, [string, string]> = {
      mp4: ["video", "video/mp4"],
      mov: ["video", "video/quicktime"],
      wav: ["audio", "audio/wav"],
      mp3: ["audio", "audio/mpeg"],
      png: ["image", "image/png"],
      jpg: ["image", "image/jpeg"],
      webp: ["image", "image/webp"]
    }
    for (const [name, bytes] of Object.entries(seeds)) {
      const outcome = await inspect(bytes)
      expect(outcome._tag, name).toBe("ok")
      const inspection = (outcome as { inspection: Inspection }).inspection
      expect([inspection.kind, inspection.mimeType], name).toEqual(expected[name])
      if (inspection.kind !== "image") expect(inspection.durationMs, name).toBeGreaterThan(1500)
      else expect([inspection.width, inspection.height], name).toEqual([64, 48])
    }
  })

  it(
    "1,000 random, truncated and mutated files: each is inspected or refused with a reason, none crashes or hangs",
    async () => {
      const names = Object.keys(seeds)
      const cases: Array<{ label: string; bytes: Uint8Array }> = []
      // Pure noise of every small length, empty included.
      for (let i = 0; i < 200; i++) cases.push({ label: `noise #${i}`, bytes: noise(i === 0 ? 0 : int(8192)) })
      // Real files cut anywhere.
      for (let i = 0; i < 350; i++) {
        const name = names[i % names.length]!
        const at = int(seeds[name]!.length)
        cases.push({ label: `${name} cut at ${at}`, bytes: seeds[name]!.subarray(0, at) })
      }
      // Real files with a few bytes changed.
      for (let i = 0; i < 300; i++) {
        const name = names[i % names.length]!
        const bytes = Uint8Array.from(seeds[name]!)
        const flips = 1 + int(20)
        for (let f = 0; f < flips; f++) bytes[int(bytes.length)] = int(256)
        cases.push({ label: `${name} with ${flips} bytes changed (#${i})`, bytes })
      }
      // A real signature followed by noise.
      for (let i = 0; i < 150; i++) {
        const name = names[i % names.length]!
        const keep = 8 + int(120)
        const bytes = new Uint8Array(keep + 2000)
        bytes.set(seeds[name]!.subarray(0, keep))
        bytes.set(noise(2000), keep)
        cases.push({ label: `${name} header (${keep} bytes) then noise`, bytes })
      }
      expect(cases).toHaveLength(1000)

      const outcomes = await runtime.runPromise(
        Effect.forEach(cases, (c) => Effect.promise(() => inspect(c.bytes)), { concurrency: 4 })
      )
      const bad = outcomes.flatMap((
        o,
        i
      ) => (o._tag === "hang" || o._tag === "defect" ? [`${cases[i]!.label}: ${JSON.stringify(o)}`] : []))
      expect(bad).toEqual([])

      const reasons = new Map<string, number>()
      for (const [i, o] of outcomes.entries()) {
        const key = o._tag === "ok" ? `ok:${o.inspection.kind}` : o._tag === "refused" ? o.reason : o._tag
        reasons.set(key, (reasons.get(key) ?? 0) + 1)
        if (o._tag === "refused") {
          expect(["unsupported_type", "unreadable", "truncated", "no_media"], cases[i]!.label).toContain(o.reason)
          expect(o.message, cases[i]!.label).not.toMatch(/\/tmp|inspect-|ffprobe|file:/)
        } else if (o._tag === "ok") {
          // Whatever passes is described completely.
          const x = o.inspection
          expect(x.sizeBytes, cases[i]!.label).toBe(cases[i]!.bytes.length)
          if (x.kind === "image") expect(x.width! * x.height!, cases[i]!.label).toBeGreaterThan(0)
          else expect(x.durationMs, cases[i]!.label).toBeGreaterThan(0)
        }
      }
      // Noise is never taken for media, and the fuzz reached the parser, not only the sniffer.
      for (const [i, o] of outcomes.slice(0, 200).entries()) expect(o._tag, cases[i]!.label).toBe("refused")
      expect(reasons.get("unreadable") ?? 0).toBeGreaterThan(50)
      expect(reasons.get("unsupported_type") ?? 0).toBeGreaterThan(200)
      console.info("fuzz outcomes", Object.fromEntries([...reasons.entries()].sort()))
    },
    240_000
  )
})
