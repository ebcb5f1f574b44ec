import { Command, CommandExecutor, FileSystem, Path } from "@effect/platform"
import { Context, Data, Duration, Effect, Layer } from "effect"
import type { ImageFormat } from "../../src/channel/contract/Media.ts"
import { sha256 } from "../../src/platform/Digest.ts"
import { MediaTools } from "../../src/platform/MediaTools.ts"
import { runTool } from "../../src/platform/ToolProcess.ts"
import { sandboxScene } from "./SandboxScene.ts"

export class ImageRenderError extends Data.TaggedError("ImageRenderError")<{ readonly message: string }> {}

export interface RenderedImage {
  readonly bytes: Uint8Array
  readonly format: ImageFormat
  readonly mimeType: string
  /** Read back from the produced file, not taken from the request. */
  readonly width: number
  readonly height: number
}

const TIMEOUT = Duration.seconds(60)

const ENCODERS: Record<
  ImageFormat,
  { readonly args: ReadonlyArray<string>; readonly mimeType: string; readonly ext: string }
> = {
  png: { args: ["-c:v", "png", "-pix_fmt", "rgb24"], mimeType: "image/png", ext: "png" },
  jpeg: { args: ["-c:v", "mjpeg", "-q:v", "3", "-pix_fmt", "yuvj444p"], mimeType: "image/jpeg", ext: "jpg" },
  webp: { args: ["-c:v", "libwebp", "-quality", "85", "-pix_fmt", "yuv420p"], mimeType: "image/webp", ext: "webp" }
}

/**
 * The sandbox's still images, with the bundled ffmpeg: `render` draws the
 * prompt's scene at the requested size and format; `edit` scales the given
 * image to the requested size and transforms it (hue turned by the prompt,
 * colours inverted) only where the mask is transparent, so every pixel under
 * an opaque mask pixel is the input's own.
 */
export class SandboxImageRenderer extends Context.Tag("SandboxImageRenderer")<SandboxImageRenderer, {
  readonly render: (request: {
    readonly prompt: string
    readonly seed: number
    readonly width: number
    readonly height: number
    readonly format: ImageFormat
  }) => Effect.Effect<RenderedImage, ImageRenderError>
  readonly edit: (request: {
    readonly prompt: string
    readonly image: Uint8Array
    readonly mask: Uint8Array | null
    readonly width: number
    readonly height: number
    readonly format: ImageFormat
  }) => Effect.Effect<RenderedImage, ImageRenderError>
}>() {
  static readonly layer = Layer.effect(
    SandboxImageRenderer,
    Effect.gen(function*() {
      const tools = yield* MediaTools
      const executor = yield* CommandExecutor.CommandExecutor
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path

      const ffmpeg = (args: ReadonlyArray<string>) =>
        runTool(Command.make(tools.ffmpegPath, "-nostdin", "-hide_banner", "-v", "error", ...args), {
          timeout: TIMEOUT
        }).pipe(
          Effect.provideService(CommandExecutor.CommandExecutor, executor),
          Effect.mapError((e) => new ImageRenderError({ message: `ffmpeg ${e.reason}: ${e.message}` })),
          Effect.filterOrFail(
            (run) => run.exitCode === 0,
            (run) =>
              new ImageRenderError({
                message: `ffmpeg exited with ${run.exitCode}: ${run.stderr.trim().split("\n").pop()}`
              })
          )
        )

      /** Width and height of the produced file, read by ffprobe. */
      const dimensions = (file: string) =>
        runTool(
          Command.make(
            tools.ffprobePath,
            "-v",
            "error",
            "-select_streams",
            "v:0",
            "-show_entries",
            "stream=width,height",
            "-of",
            "csv=p=0:s=x",
            `file:${file}`
          ),
          { timeout: TIMEOUT }
        ).pipe(
          Effect.provideService(CommandExecutor.CommandExecutor, executor),
          Effect.mapError((e) => new ImageRenderError({ message: `ffprobe ${e.reason}: ${e.message}` })),
          Effect.flatMap((run) => {
            const match = /^(\d+)x(\d+)/.exec(run.stdout.trim())
            return match
              ? Effect.succeed({ width: Number(match[1]), height: Number(match[2]) })
              : Effect.fail(new ImageRenderError({ message: `ffprobe could not read the produced image` }))
          })
        )

      const produce = (
        format: ImageFormat,
        run: (dir: string, output: string) => Effect.Effect<unknown, ImageRenderError>
      ) =>
        Effect.gen(function*() {
          const encoder = ENCODERS[format]
          const dir = yield* fs.makeTempDirectoryScoped({ prefix: "sandbox-image-" })
          const output = path.join(dir, `out.${encoder.ext}`)
          yield* run(dir, output)
          const bytes = yield* fs.readFile(output)
          const { width, height } = yield* dimensions(output)
          return { bytes, format, mimeType: encoder.mimeType, width, height }
        }).pipe(
          Effect.catchTag("SystemError", "BadArgument", (e) => new ImageRenderError({ message: e.message })),
          Effect.scoped
        )

      const render: SandboxImageRenderer["Type"]["render"] = (request) =>
        Effect.gen(function*() {
          const scene = sandboxScene(yield* Effect.promise(() => sha256(`${request.prompt}\u0000${request.seed}`)), {
            width: request.width,
            height: request.height,
            frames: 1,
            samples: undefined
          })
          return yield* produce(request.format, (_dir, output) =>
            ffmpeg([
              "-filter_complex",
              scene.filterGraph,
              "-map",
              scene.videoLabel,
              "-frames:v",
              "1",
              ...ENCODERS[request.format].args,
              "-f",
              "image2",
              "-y",
              output
            ]))
        }).pipe(
          Effect.withSpan("SandboxImageRenderer.render", {
            attributes: { width: request.width, height: request.height }
          })
        )

      const edit: SandboxImageRenderer["Type"]["edit"] = (request) =>
        Effect.gen(function*() {
          const digest = yield* Effect.promise(() => sha256(request.prompt))
          const hue = Math.round((digest[0]! / 255) * 300) + 30
          const size = `${request.width}:${request.height}`
          // gbrp keeps every channel at full resolution, so unmasked pixels survive bit for bit.
          const change = `hue=h=${hue},negate`
          const graph = request.mask === null
            ? `[0:v]scale=${size},format=gbrp,${change}[out]`
            : `[0:v]scale=${size},format=gbrp,split[keep][work];[work]${change}[changed];` +
              `[1:v]scale=${size},format=rgba,alphaextract,negate,format=gbrp[m];[keep][changed][m]maskedmerge[out]`
          return yield* produce(request.format, (dir, output) =>
            Effect.gen(function*() {
              const input = path.join(dir, "input")
              yield* fs.writeFile(input, request.image)
              const mask = path.join(dir, "mask")
              if (request.mask !== null) yield* fs.writeFile(mask, request.mask)
              yield* ffmpeg([
                "-i",
                `file:${input}`,
                ...(request.mask !== null ? ["-i", `file:${mask}`] : []),
                "-filter_complex",
                graph,
                "-map",
                "[out]",
                "-frames:v",
                "1",
                ...ENCODERS[request.format].args,
                "-f",
                "image2",
                "-y",
                output
              ])
            }).pipe(Effect.catchTag("SystemError", "BadArgument", (e) => new ImageRenderError({ message: e.message }))))
        }).pipe(
          Effect.withSpan("SandboxImageRenderer.edit", { attributes: { width: request.width, height: request.height } })
        )

      return { render, edit }
    })
  )
}
