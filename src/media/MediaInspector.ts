import { Command, CommandExecutor, FileSystem, Path } from "@effect/platform"
import { Context, Data, Duration, Effect, Either, Layer, Option, Schema } from "effect"
import { fileTypeFromBuffer } from "file-type"
import { MediaTools } from "../platform/MediaTools.ts"
import { runTool } from "../platform/ToolProcess.ts"
import { ffprobeArgs, mediaInfoFromFfprobe, Num } from "./Ffprobe.ts"
import type { ProbeError } from "./MediaInfo.ts"
import { inspectable, normalizeMimeType, type UploadKind } from "./MediaTypes.ts"

/** What a file really is, read from its bytes. */
export interface Inspection {
  readonly kind: UploadKind
  /** Sniffed from the content; names and declared types are not trusted. */
  readonly mimeType: string
  readonly sizeBytes: number
  /** Video and audio. */
  readonly durationMs?: number
  /** Images and videos. */
  readonly width?: number
  readonly height?: number
}

/** The type read from a file's first bytes; `kind` is absent for a type the inspector does not read. */
export interface Sniffed {
  readonly mimeType: string
  readonly kind: UploadKind | undefined
}

/**
 * Why a file is not usable media. The message is meant for the caller: it
 * names no temporary path and no tool. `unsupported_type`: not a PNG, JPEG,
 * WebP, MP4, MOV, MP3 or WAV; `unreadable`, `truncated`, `no_media`: the
 * content does not parse as what it claims to be (or has no stream of its
 * kind); `unavailable`: the inspection itself failed (time-out, tool), not the file.
 */
export class InspectError extends Data.TaggedError("InspectError")<{
  readonly reason: "unsupported_type" | "unreadable" | "truncated" | "no_media" | "unavailable"
  readonly message: string
}> {}

/** Enough for every format's signature, an ID3 tag with cover art included. */
export const SNIFF_BYTES = 1024 * 1024
/** Images are decoded to prove them whole; this bounds the memory a decode may take. */
export const MAX_IMAGE_PIXELS = 64 * 1024 * 1024
const PROBE_TIMEOUT = Duration.seconds(30)

const NAMES: Record<string, string> = {
  "image/png": "a PNG image",
  "image/jpeg": "a JPEG image",
  "image/webp": "a WebP image",
  "video/mp4": "an MP4 video",
  "video/quicktime": "a MOV video",
  "audio/mpeg": "an MP3 file",
  "audio/wav": "a WAV file"
}
export const describeType = (mimeType: string) => NAMES[mimeType] ?? mimeType

/** The demuxers ffprobe may use for each type: exactly the sniffed container, nothing that opens other files. */
const FORMATS: Record<string, ReadonlyArray<string>> = {
  "image/png": ["png_pipe"],
  "image/jpeg": ["jpeg_pipe"],
  "image/webp": ["webp_pipe"],
  "video/mp4": ["mov", "mp4", "m4a", "3gp", "3g2", "mj2"],
  "video/quicktime": ["mov", "mp4", "m4a", "3gp", "3g2", "mj2"],
  "audio/mpeg": ["mp3"],
  "audio/wav": ["wav"]
}

const imageArgs = (absolutePath: string, formats: ReadonlyArray<string>): Array<string> => [
  "-v",
  "error",
  "-hide_banner",
  "-protocol_whitelist",
  "file",
  "-format_whitelist",
  formats.join(","),
  // Decoding the frame proves the image whole; the pixel bound keeps a decompression bomb small.
  "-max_pixels",
  String(MAX_IMAGE_PIXELS),
  "-count_frames",
  "-print_format",
  "json",
  "-show_streams",
  `file:${absolutePath}`
]

const RawImage = Schema.parseJson(Schema.Struct({
  streams: Schema.optionalWith(
    Schema.Array(Schema.Struct({
      codec_type: Schema.optional(Schema.String),
      width: Schema.optional(Num),
      height: Schema.optional(Num),
      nb_read_frames: Schema.optional(Num)
    })),
    { default: () => [] }
  )
}))

const positive = (x: number | string | undefined) => {
  const n = Number(x)
  return Number.isInteger(n) && n > 0 ? n : undefined
}

/** ffprobe's reasons in words for a caller; the tool's own message may hold temporary paths. */
const fromProbe = (e: ProbeError, mimeType: string): InspectError => {
  const what = describeType(mimeType)
  switch (e.reason) {
    case "truncated":
      return new InspectError({
        reason: "truncated",
        message: `the file is cut short (${what} holding fewer samples than its header announces)`
      })
    case "no_media":
      return new InspectError({ reason: "no_media", message: `the file has no audio or video stream with a duration` })
    case "unreadable":
      return new InspectError({ reason: "unreadable", message: `the file cannot be parsed as ${what}` })
    case "timeout":
    case "tool_failed":
      return new InspectError({
        reason: "unavailable",
        message: "the file could not be inspected right now; try again"
      })
  }
}

/**
 * Tells what a media file really is: the type from its bytes (`file-type`),
 * then duration and streams (video, audio) or dimensions (images) from
 * ffprobe, restricted to local files and to the sniffed container's demuxer.
 * Every failure is an `InspectError`; nothing a file holds can make it die.
 */
export class MediaInspector extends Context.Tag("MediaInspector")<MediaInspector, {
  readonly sniff: (head: Uint8Array) => Effect.Effect<Option.Option<Sniffed>>
  /** Probes a file already sniffed as a type the inspector reads. */
  readonly probe: (
    filePath: string,
    sniffed: Sniffed & { readonly kind: UploadKind },
    sizeBytes: number
  ) => Effect.Effect<Inspection, InspectError>
  /** Sniffs `head` (the file's first bytes, up to SNIFF_BYTES) and probes the file. */
  readonly inspectFile: (
    filePath: string,
    head: Uint8Array,
    sizeBytes: number
  ) => Effect.Effect<Inspection, InspectError>
  readonly inspectBytes: (bytes: Uint8Array) => Effect.Effect<Inspection, InspectError>
}>() {
  static readonly layer = Layer.effect(
    MediaInspector,
    Effect.gen(function*() {
      const tools = yield* MediaTools
      const executor = yield* CommandExecutor.CommandExecutor
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path

      const ffprobe = (args: Array<string>) =>
        runTool(Command.make(tools.ffprobePath, ...args), { timeout: PROBE_TIMEOUT }).pipe(
          Effect.provideService(CommandExecutor.CommandExecutor, executor),
          Effect.mapError(() =>
            new InspectError({ reason: "unavailable", message: "the file could not be inspected right now; try again" })
          )
        )

      const sniff = (head: Uint8Array) =>
        Effect.tryPromise(() => fileTypeFromBuffer(head)).pipe(
          Effect.map((found) => {
            if (found === undefined) return Option.none<Sniffed>()
            const mimeType = normalizeMimeType(found.mime)
            return Option.some({ mimeType, kind: inspectable(mimeType)?.kind })
          }),
          Effect.orElseSucceed(() => Option.none<Sniffed>())
        )

      const probeImage = (
        filePath: string,
        mimeType: string,
        sizeBytes: number
      ): Effect.Effect<Inspection, InspectError> =>
        Effect.gen(function*() {
          const run = yield* ffprobe(imageArgs(path.resolve(filePath), FORMATS[mimeType]!))
          const decoded = Schema.decodeUnknownEither(RawImage)(run.stdout)
          const stream = Either.isRight(decoded)
            ? decoded.right.streams.find((s) => s.codec_type === "video")
            : undefined
          const width = positive(stream?.width)
          const height = positive(stream?.height)
          if (
            run.exitCode !== 0 || stream === undefined || width === undefined || height === undefined ||
            !positive(stream.nb_read_frames)
          ) {
            return yield* new InspectError({
              reason: "unreadable",
              message: `the file cannot be decoded as ${describeType(mimeType)} (or it is larger than ${
                MAX_IMAGE_PIXELS / 1024 / 1024
              } megapixels)`
            })
          }
          return { kind: "image" as const, mimeType, sizeBytes, width, height }
        })

      const probeMedia = (
        filePath: string,
        mimeType: string,
        kind: "video" | "audio",
        sizeBytes: number
      ): Effect.Effect<Inspection, InspectError> =>
        Effect.gen(function*() {
          const run = yield* ffprobe(ffprobeArgs(path.resolve(filePath), FORMATS[mimeType]!))
          if (run.exitCode !== 0) {
            return yield* new InspectError({
              reason: "unreadable",
              message: `the file cannot be parsed as ${describeType(mimeType)}`
            })
          }
          const info = yield* mediaInfoFromFfprobe(run.stdout).pipe(Effect.mapError((e) => fromProbe(e, mimeType)))
          if (kind === "video" && info.video === undefined) {
            return yield* new InspectError({ reason: "no_media", message: "the file has no video stream" })
          }
          if (kind === "audio" && (info.audio === undefined || info.video !== undefined)) {
            return yield* new InspectError({
              reason: "no_media",
              message: info.audio === undefined
                ? "the file has no audio stream"
                : "the file holds video, not only audio"
            })
          }
          return {
            kind,
            mimeType,
            sizeBytes,
            durationMs: info.durationMs,
            ...(info.video ? { width: info.video.width, height: info.video.height } : {})
          }
        })

      const probe = (filePath: string, sniffed: Sniffed & { readonly kind: UploadKind }, sizeBytes: number) =>
        (sniffed.kind === "image"
          ? probeImage(filePath, sniffed.mimeType, sizeBytes)
          : probeMedia(filePath, sniffed.mimeType, sniffed.kind, sizeBytes)).pipe(
            Effect.withSpan("MediaInspector.probe", {
              attributes: { "media.type": sniffed.mimeType, "media.size": sizeBytes }
            })
          )

      const inspectFile = (filePath: string, head: Uint8Array, sizeBytes: number) =>
        Effect.gen(function*() {
          const sniffed = yield* sniff(head.subarray(0, SNIFF_BYTES))
          if (Option.isNone(sniffed) || sniffed.value.kind === undefined) {
            return yield* new InspectError({
              reason: "unsupported_type",
              message: Option.isNone(sniffed)
                ? "the content is not a PNG, JPEG or WebP image, an MP4 or MOV video, or an MP3 or WAV file"
                : `the content is ${sniffed.value.mimeType}, which is not accepted`
            })
          }
          return yield* probe(filePath, { mimeType: sniffed.value.mimeType, kind: sniffed.value.kind }, sizeBytes)
        })

      const inspectBytes = (bytes: Uint8Array) =>
        Effect.gen(function*() {
          const dir = yield* fs.makeTempDirectoryScoped({ prefix: "inspect-" })
          const file = path.join(dir, "media")
          yield* fs.writeFile(file, bytes)
          return yield* inspectFile(file, bytes.subarray(0, SNIFF_BYTES), bytes.byteLength)
        }).pipe(
          Effect.catchTag("SystemError", "BadArgument", () =>
            new InspectError({
              reason: "unavailable",
              message: "the file could not be inspected right now; try again"
            })),
          Effect.scoped
        )

      return { sniff, probe, inspectFile, inspectBytes }
    })
  )
}
