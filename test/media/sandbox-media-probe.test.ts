// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import { Effect } from "effect"
import { chmodSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { ProbeOptions } from "../../channels/sandbox/SandboxRenderer.ts"
import { SandboxRenderer } from "../../channels/sandbox/SandboxRenderer.ts"
import {
  isAlive,
  makeAudio,
  rawProbe,
  removeScratch,
  rendererRuntime,
  scratchDir,
  writeTemp
} from "../support/sandboxMedia.ts"

const { runtime } = rendererRuntime()
afterAll(async () => {
  await runtime.dispose()
  removeScratch()
})

const probe = (file: string, options?: ProbeOptions) =>
  runtime.runPromise(Effect.flatMap(SandboxRenderer, (r) => r.probe(file, options)))
const probeError = (bytes: Uint8Array) =>
  runtime.runPromise(Effect.flip(Effect.flatMap(SandboxRenderer, (r) => r.probeBytes(bytes))))

let mp4: Uint8Array
beforeAll(async () => {
  mp4 = (await runtime.runPromise(Effect.flatMap(SandboxRenderer, (r) =>
    r.renderVideo({ prompt: "probe me", durationS: 3, width: 640, height: 360, audio: true })))).bytes
})

describe("SandboxRenderer.probe", () => {
  it("describes an MP4 as ffprobe itself sees it", async () => {
    const file = writeTemp(mp4)
    const info = await probe(file)
    const raw = await rawProbe(file)
    const v = raw.streams.find((s) => s.codec_type === "video")!
    const a = raw.streams.find((s) => s.codec_type === "audio")!
    expect(info).toEqual({
      formatName: raw.format.format_name,
      formatNames: raw.format.format_name.split(","),
      majorBrand: raw.format.tags!.major_brand,
      durationMs: Math.round(Number(raw.format.duration) * 1000),
      sizeBytes: mp4.length,
      video: { codec: "h264", width: 640, height: 360, pixFmt: "yuv420p", profile: v.profile },
      audio: { codec: "aac", channels: a.channels, sampleRate: Number(a.sample_rate) }
    })
    expect(info.durationMs).toBe(3000)
    // The same answer from bytes as from a path.
    expect(await runtime.runPromise(Effect.flatMap(SandboxRenderer, (r) => r.probeBytes(mp4)))).toEqual(info)
  })

  it("describes WAV and MP3 as audio-only media with their duration", async () => {
    const wav = await probe(await makeAudio("tone.wav", 3))
    expect(wav).toMatchObject({
      formatName: "wav",
      durationMs: 3000,
      audio: { codec: "pcm_s16le", channels: 1, sampleRate: 44100 }
    })
    expect(wav.video).toBeUndefined()

    const mp3 = await probe(await makeAudio("tone.mp3", 4))
    expect(mp3).toMatchObject({ formatName: "mp3", audio: { codec: "mp3", channels: 1 } })
    expect(Math.abs(mp3.durationMs - 4000)).toBeLessThan(100)
    expect(mp3.video).toBeUndefined()
  })

  it("fails with ProbeError for garbage, a cut header and a cut body", async () => {
    const garbage = new Uint8Array(4096).map((_, i) => (i * 7919) % 251)
    expect(await probeError(garbage)).toMatchObject({ _tag: "ProbeError", reason: "unreadable" })
    expect(await probeError(new Uint8Array(0))).toMatchObject({ _tag: "ProbeError", reason: "unreadable" })
    expect(await probeError(mp4.subarray(0, 600))).toMatchObject({ _tag: "ProbeError", reason: "unreadable" })
    // moov comes first (faststart), so a file cut in its media data still has a whole header.
    expect(await probeError(mp4.subarray(0, Math.floor(mp4.length / 2)))).toMatchObject({
      _tag: "ProbeError",
      reason: "truncated"
    })
  })

  it("fails with ProbeError for a missing file and for formats not on the list (no playlists)", async () => {
    const missing = await runtime.runPromise(
      Effect.flip(Effect.flatMap(SandboxRenderer, (r) => r.probe("/nonexistent/clip.mp4")))
    )
    expect(missing).toMatchObject({ _tag: "ProbeError", reason: "unreadable" })

    const dir = scratchDir()
    writeFileSync(join(dir, "clip.mp4"), mp4)
    const playlist = join(dir, "list.m3u8")
    writeFileSync(playlist, "#EXTM3U\n#EXT-X-TARGETDURATION:3\n#EXTINF:3.0,\nclip.mp4\n#EXT-X-ENDLIST\n")
    const refused = await runtime.runPromise(Effect.flip(Effect.flatMap(SandboxRenderer, (r) => r.probe(playlist))))
    expect(refused).toMatchObject({ _tag: "ProbeError", reason: "unreadable" })

    // WAV is accepted by default and refused when the caller narrows the list.
    const wav = await makeAudio("tone.wav", 2)
    const narrowed = await runtime.runPromise(
      Effect.flip(Effect.flatMap(SandboxRenderer, (r) => r.probe(wav, { formats: ["mov", "mp4"] })))
    )
    expect(narrowed).toMatchObject({ _tag: "ProbeError", reason: "unreadable" })
  })

  it("gives up on a hung prober with ProbeError timeout and kills it, even when it ignores SIGTERM", async () => {
    const hung = join(scratchDir(), "ffprobe")
    writeFileSync(hung, "#!/bin/sh\ntrap '' TERM\nexec sleep 60\n")
    chmodSync(hung, 0o755)
    const fake = rendererRuntime({ ffmpegPath: hung, ffprobePath: hung })
    try {
      const error = await fake.runtime.runPromise(
        Effect.flip(Effect.flatMap(SandboxRenderer, (r) => r.probeBytes(mp4, { timeout: "300 millis" })))
      )
      expect(error).toMatchObject({ _tag: "ProbeError", reason: "timeout" })
      expect(fake.started).toHaveLength(1)
      expect(isAlive(fake.started[0]!.pid)).toBe(false)
    } finally {
      await fake.runtime.dispose()
    }
  })
})
