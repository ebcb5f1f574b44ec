import { Config, Data, Effect, Layer, Option } from "effect"
import { accessSync, constants } from "node:fs"
import { MediaTools } from "../../platform/MediaTools.ts"

export class MediaToolsUnavailable extends Data.TaggedError("MediaToolsUnavailable")<{ readonly message: string }> {}

const executable = (tool: string, path: string) =>
  Effect.try({
    try: () => {
      accessSync(path, constants.X_OK)
      return path
    },
    catch: () => new MediaToolsUnavailable({ message: `${tool} at ${path} is missing or not executable` })
  })

/**
 * The env variable wins so an operator can use a system build; otherwise the
 * static binary of the installer package. The package is imported lazily
 * because it throws (a string) on an unsupported platform.
 */
const resolveTool = (tool: string, envName: string, installed: () => Promise<string>) =>
  Effect.gen(function*() {
    const fromEnv = yield* Config.option(Config.nonEmptyString(envName)).pipe(
      Effect.mapError((e) => new MediaToolsUnavailable({ message: `${envName}: ${e}` }))
    )
    const path = Option.isSome(fromEnv)
      ? fromEnv.value
      : yield* Effect.tryPromise({
        try: installed,
        catch: (e) =>
          new MediaToolsUnavailable({ message: `no ${tool} for this platform (set ${envName}): ${String(e)}` })
      })
    return yield* executable(tool, path)
  })

/** ffmpeg/ffprobe on Node: `FFMPEG_PATH` / `FFPROBE_PATH`, else the @ffmpeg-installer / @ffprobe-installer binaries. */
export const MediaToolsLive = Layer.effect(
  MediaTools,
  Effect.all({
    ffmpegPath: resolveTool(
      "ffmpeg",
      "FFMPEG_PATH",
      async () => (await import("@ffmpeg-installer/ffmpeg")).default.path
    ),
    ffprobePath: resolveTool(
      "ffprobe",
      "FFPROBE_PATH",
      async () => (await import("@ffprobe-installer/ffprobe")).default.path
    )
  })
)
