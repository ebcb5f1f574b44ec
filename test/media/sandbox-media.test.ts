// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import { Effect, Fiber } from "effect"
import { existsSync, readFileSync } from "node:fs"
import { dirname } from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { SandboxRenderer } from "../../channels/sandbox/SandboxRenderer.ts"
import { eventually } from "../support/eventually.ts"
import {
  frameAt,
  isAlive,
  meanAbsDiff,
  pcm,
  rawProbe,
  removeScratch,
  rendererRuntime,
  sha256,
  topLevelBoxes,
  writeTemp
} from "../support/sandboxMedia.ts"

const { runtime, started } = rendererRuntime()
afterAll(async () => {
  await runtime.dispose()
  removeScratch()
})

const FRAME_S = 1 / 24

const render = (request: { prompt: string; durationS: number; width: number; height: number; audio: boolean }) => {
  const progress: Array<number> = []
  return runtime.runPromise(
    Effect.flatMap(SandboxRenderer, (r) =>
      r.renderVideo({
        ...request,
        onProgress: (p) => Effect.sync(() => progress.push(p))
      }))
  ).then((video) => ({ video, progress, file: writeTemp(video.bytes) }))
}

describe("SandboxRenderer.renderVideo", () => {
  const cases = [
    { durationS: 4, width: 854, height: 480, audio: false },
    { durationS: 8, width: 1280, height: 720, audio: true },
    { durationS: 5, width: 720, height: 1280, audio: true },
    { durationS: 7, width: 960, height: 720, audio: false }
  ]
  for (const c of cases) {
    it(`${c.durationS} s ${c.width}×${c.height} ${c.audio ? "with" : "without"} audio: a browser-playable H.264 MP4 of exactly that`, async () => {
      const { video, progress, file } = await render({ prompt: `a lighthouse in a storm ${c.width}`, ...c })
      const probed = await rawProbe(file)

      expect(probed.format.format_name).toContain("mp4")
      expect(["isom", "mp42", "mp41", "iso5", "iso6"]).toContain(probed.format.tags?.major_brand)
      expect(Math.abs(Number(probed.format.duration) - c.durationS)).toBeLessThanOrEqual(FRAME_S)

      const videoStreams = probed.streams.filter((s) => s.codec_type === "video")
      expect(videoStreams).toHaveLength(1)
      const v = videoStreams[0]!
      expect(v.codec_name).toBe("h264")
      expect(["High", "Main"]).toContain(v.profile)
      expect(v.pix_fmt).toBe("yuv420p")
      expect([v.width, v.height]).toEqual([c.width, c.height])
      // Frame-accurate: exactly 24 frames per requested second.
      expect(Number(v.nb_read_packets)).toBe(c.durationS * 24)
      expect(Math.abs(Number(v.duration) - c.durationS)).toBeLessThanOrEqual(FRAME_S)

      const audioStreams = probed.streams.filter((s) => s.codec_type === "audio")
      if (c.audio) {
        expect(audioStreams).toHaveLength(1)
        expect(audioStreams[0]!.codec_name).toBe("aac")
        expect(Math.abs(Number(audioStreams[0]!.duration) - c.durationS)).toBeLessThanOrEqual(FRAME_S)
      } else {
        expect(audioStreams).toHaveLength(0)
      }

      // Faststart: the index precedes the media data, so playback can begin while downloading.
      const boxes = topLevelBoxes(video.bytes)
      expect(boxes.indexOf("moov")).toBeGreaterThanOrEqual(0)
      expect(boxes.indexOf("moov")).toBeLessThan(boxes.indexOf("mdat"))

      expect(video).toMatchObject({
        mimeType: "video/mp4",
        width: c.width,
        height: c.height,
        durationMs: c.durationS * 1000
      })
      expect(readFileSync(file).length).toBe(video.bytes.length)

      expect(progress.length).toBeGreaterThanOrEqual(2)
      for (let i = 1; i < progress.length; i++) expect(progress[i]!).toBeGreaterThan(progress[i - 1]!)
      expect(progress[0]!).toBeGreaterThanOrEqual(0)
      expect(progress.at(-1)).toBe(100)
    })
  }

  it("draws picture and sound from the prompt: other prompts differ visibly and audibly, the same prompt repeats", async () => {
    const prompts = ["a red fox in snow", "city at night", "ocean waves", "a cat"]
    const size = { durationS: 2, width: 320, height: 180, audio: true }
    const files = await Promise.all(prompts.map(async (prompt) => (await render({ prompt, ...size })).file))
    const frames = await Promise.all(files.map((file) => frameAt(file, 1)))
    for (const f of frames) expect(f.length).toBe(320 * 180 * 3)
    expect(new Set(frames.map(sha256)).size).toBe(prompts.length)
    for (let i = 0; i < frames.length; i++) {
      for (let j = i + 1; j < frames.length; j++) expect(meanAbsDiff(frames[i]!, frames[j]!)).toBeGreaterThan(10)
    }
    const sounds = await Promise.all(files.map((file) => pcm(file, 1)))
    for (const s of sounds) expect(s.length).toBeGreaterThan(0)
    expect(new Set(sounds.map(sha256)).size).toBe(prompts.length)

    const again = (await render({ prompt: prompts[0]!, ...size })).file
    expect(sha256(await frameAt(again, 1))).toBe(sha256(frames[0]!))
    expect(sha256(await pcm(again, 1))).toBe(sha256(sounds[0]!))
  })

  it("kills ffmpeg and removes its temporary directory when the caller is interrupted", async () => {
    const before = started.length
    const fiber = runtime.runFork(
      Effect.flatMap(
        SandboxRenderer,
        (r) => r.renderVideo({ prompt: "interrupted", durationS: 30, width: 1920, height: 1080, audio: true })
      )
    )
    await eventually(() => started.length > before, "a tool started", { deadlineMs: 10_000, intervalMs: 20 })
    const ffmpeg = started[started.length - 1]!
    const output = ffmpeg.args[ffmpeg.args.length - 1]!
    await eventually(() => existsSync(output), "the output file exists", { deadlineMs: 10_000, intervalMs: 20 })
    expect(isAlive(ffmpeg.pid)).toBe(true)

    await runtime.runPromise(Fiber.interrupt(fiber))
    expect(isAlive(ffmpeg.pid)).toBe(false)
    expect(existsSync(dirname(output))).toBe(false)
  })

  it("refuses sizes H.264 4:2:0 cannot carry and reports a failing ffmpeg as RenderError, not a defect", async () => {
    const odd = await runtime.runPromise(
      Effect.flip(
        Effect.flatMap(
          SandboxRenderer,
          (r) => r.renderVideo({ prompt: "x", durationS: 4, width: 853, height: 480, audio: false })
        )
      )
    )
    expect(odd._tag).toBe("RenderError")

    const broken = rendererRuntime({ ffmpegPath: "/bin/false", ffprobePath: "/bin/false" })
    const failed = await broken.runtime.runPromise(
      Effect.flip(
        Effect.flatMap(
          SandboxRenderer,
          (r) => r.renderVideo({ prompt: "x", durationS: 1, width: 64, height: 64, audio: false })
        )
      )
    )
    expect(failed._tag).toBe("RenderError")
    expect(failed.message).toContain("exited with 1")
    await broken.runtime.dispose()
  })
})
