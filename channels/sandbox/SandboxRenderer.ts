import { Command, CommandExecutor, FileSystem, Path } from "@effect/platform"
import { Context, Data, Duration, Effect, Layer, Ref } from "effect"
import {
  DEFAULT_PROBE_FORMATS,
  ffprobeArgs,
  type MediaInfo,
  mediaInfoFromFfprobe,
  ProbeError
} from "../../src/channel/contract/Media.ts"
import { sha256 } from "../../src/platform/Digest.ts"
import { MediaTools } from "../../src/platform/MediaTools.ts"
import { runTool, type ToolError } from "../../src/platform/ToolProcess.ts"
import { FPS, SAMPLE_RATE, sandboxScene } from "./SandboxScene.ts"

export class RenderError extends Data.TaggedError("RenderError")<{ readonly message: string }> {}

export interface RenderRequest {
  readonly prompt: string
  readonly durationS: number
  readonly width: number
  readonly height: number
  readonly audio: boolean
  /** Percent of the encode done, increasing; 100 only once the file is complete. */
  readonly onProgress?: (percent: number) => Effect.Effect<void>
}

export interface RenderedVideo {
  readonly bytes: Uint8Array
  readonly mimeType: "video/mp4"
  readonly width: number
  readonly height: number
  readonly durationMs: number
}

export interface ProbeOptions {
  /** Demuxer names to accept; default MP4/MOV, WAV, MP3. */
  readonly formats?: ReadonlyArray<string>
  readonly timeout?: Duration.DurationInput
}

const MAX_SIDE = 4096
const MAX_SECONDS = 600
const PROBE_TIMEOUT = Duration.seconds(30)
/** Generous: a 30 s 1080p clip takes about 10 s alone, longer when tasks share the cores. */
const renderTimeout = (seconds: number) => Duration.seconds(60 + 10 * seconds)

const lastLine = (text: string) => text.trim().split("\n").pop() ?? ""

const encoderArgs = (audio: boolean): Array<string> => [
  // veryfast at CRF 26 keeps an 8 s 720p clip near 2 s on two cores at a modest size.
  "-c:v",
  "libx264",
  "-preset",
  "veryfast",
  "-crf",
  "26",
  "-profile:v",
  "high",
  "-pix_fmt",
  "yuv420p",
  "-g",
  String(2 * FPS),
  ...(audio ? ["-c:a", "aac", "-b:a", "96k"] : ["-an"]),
  // moov before mdat: a browser can start playing before the whole file arrived.
  "-movflags",
  "+faststart",
  "-f",
  "mp4"
]

/**
 * Renders the sandbox generator's videos with ffmpeg and describes media
 * files with ffprobe. Every tool run is bounded by a timeout and killed when
 * its caller is interrupted; temporary files live in a scoped directory.
 */
export class SandboxRenderer extends Context.Tag("SandboxRenderer")<SandboxRenderer, {
  /** An H.264/AAC MP4 of exactly `round(durationS × 24)` frames at width×height, drawn from the prompt. */
  readonly renderVideo: (request: RenderRequest) => Effect.Effect<RenderedVideo, RenderError>
  /** What the file at `filePath` really holds; fails with `ProbeError` for anything that is not whole, accepted media. */
  readonly probe: (filePath: string, options?: ProbeOptions) => Effect.Effect<MediaInfo, ProbeError>
  readonly probeBytes: (bytes: Uint8Array, options?: ProbeOptions) => Effect.Effect<MediaInfo, ProbeError>
}>() {
  static readonly layer = Layer.effect(
    SandboxRenderer,
    Effect.gen(function*() {
      const tools = yield* MediaTools
      const executor = yield* CommandExecutor.CommandExecutor
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
      const run = (command: Command.Command, options: Parameters<typeof runTool>[1]) =>
        runTool(command, options).pipe(Effect.provideService(CommandExecutor.CommandExecutor, executor))

      const renderVideo = (request: RenderRequest) =>
        Effect.gen(function*() {
          const { width, height, durationS } = request
          const frames = Math.round(durationS * FPS)
          const evenSide = (n: number) => Number.isInteger(n) && n >= 2 && n <= MAX_SIDE && n % 2 === 0
          if (!evenSide(width) || !evenSide(height) || !(frames >= 1 && durationS <= MAX_SECONDS)) {
            return yield* new RenderError({ message: `cannot render ${width}×${height} for ${durationS} s` })
          }
          const scene = sandboxScene(yield* Effect.promise(() => sha256(request.prompt)), {
            width,
            height,
            frames,
            samples: request.audio ? Math.round((frames / FPS) * SAMPLE_RATE) : undefined
          })
          const dir = yield* fs.makeTempDirectoryScoped({ prefix: "sandbox-render-" })
          const output = path.join(dir, "video.mp4")

          const totalUs = (frames / FPS) * 1e6
          const reported = yield* Ref.make(0)
          const report = (percent: number) =>
            Effect.flatMap(
              Ref.modify(reported, (last) => (percent > last ? [true, percent] : [false, last])),
              (isNew) => (isNew && request.onProgress ? request.onProgress(percent) : Effect.void)
            )
          const onStdoutLine = (line: string) => {
            // Older ffmpeg builds name the microsecond field out_time_ms.
            const m = /^out_time_(?:us|ms)=(\d+)$/.exec(line.trim())
            return m ? report(Math.min(99, Math.floor((Number(m[1]) / totalUs) * 100))) : Effect.void
          }

          const command = Command.make(
            tools.ffmpegPath,
            "-nostdin",
            "-hide_banner",
            "-v",
            "error",
            "-nostats",
            "-progress",
            "pipe:1",
            "-filter_complex",
            scene.filterGraph,
            "-map",
            scene.videoLabel,
            ...(scene.audioLabel ? ["-map", scene.audioLabel] : []),
            ...encoderArgs(scene.audioLabel !== undefined),
            "-y",
            output
          )
          const result = yield* run(command, { timeout: renderTimeout(durationS), onStdoutLine }).pipe(
            Effect.mapError((e: ToolError) => new RenderError({ message: `ffmpeg ${e.reason}: ${e.message}` }))
          )
          if (result.exitCode !== 0) {
            return yield* new RenderError({
              message: `ffmpeg exited with ${result.exitCode}: ${lastLine(result.stderr)}`
            })
          }
          const bytes = yield* fs.readFile(output).pipe(
            Effect.mapError((e) => new RenderError({ message: `reading the rendered file: ${e.message}` }))
          )
          yield* report(100)
          return { bytes, mimeType: "video/mp4" as const, width, height, durationMs: Math.round((frames / FPS) * 1000) }
        }).pipe(
          Effect.catchTag("SystemError", "BadArgument", (e) =>
            new RenderError({ message: `temporary directory: ${e.message}` })),
          Effect.scoped,
          Effect.withSpan("SandboxRenderer.renderVideo", {
            attributes: {
              width: request.width,
              height: request.height,
              duration_s: request.durationS,
              audio: request.audio
            }
          })
        )

      const probe = (filePath: string, options?: ProbeOptions) =>
        Effect.gen(function*() {
          const command = Command.make(
            tools.ffprobePath,
            ...ffprobeArgs(path.resolve(filePath), options?.formats ?? DEFAULT_PROBE_FORMATS)
          )
          const result = yield* run(command, { timeout: options?.timeout ?? PROBE_TIMEOUT }).pipe(
            Effect.mapError((e) =>
              new ProbeError({
                reason: e.reason === "timeout" ? "timeout" : "tool_failed",
                message: `ffprobe ${e.reason}: ${e.message}`
              })
            )
          )
          if (result.exitCode !== 0) {
            return yield* new ProbeError({
              reason: "unreadable",
              message: lastLine(result.stderr) || `ffprobe exited with ${result.exitCode}`
            })
          }
          return yield* mediaInfoFromFfprobe(result.stdout)
        }).pipe(Effect.withSpan("SandboxRenderer.probe"))

      const probeBytes = (bytes: Uint8Array, options?: ProbeOptions) =>
        Effect.gen(function*() {
          const dir = yield* fs.makeTempDirectoryScoped({ prefix: "probe-" })
          const file = path.join(dir, "media")
          yield* fs.writeFile(file, bytes)
          return yield* probe(file, options)
        }).pipe(
          Effect.catchTag("SystemError", "BadArgument", (e) =>
            new ProbeError({ reason: "tool_failed", message: `temporary file: ${e.message}` })),
          Effect.scoped
        )

      return { renderVideo, probe, probeBytes }
    })
  )
}
