import { Effect } from "effect"
import { LocalFileError } from "../client/Errors.ts"
import { describeFile, isUrl } from "../client/LocalFiles.ts"
import type { VideoTaskRequest } from "../client/Tasks.ts"
import type { UploadKind } from "../media/MediaTypes.ts"
import { type Common, UsageError } from "./Common.ts"
import { uploadWithProgress } from "./UploadFlow.ts"

export type Mode = "frame" | "images" | "media"

export interface ReferenceFlags {
  readonly images: ReadonlyArray<string>
  readonly lastFrame: string | undefined
  readonly videos: ReadonlyArray<string>
  readonly audios: ReadonlyArray<string>
  readonly mode: Mode | undefined
}

type Input = VideoTaskRequest["input"]
type Placement = Pick<Input, "reference_mode" | "image" | "reference_images" | "reference_videos" | "reference_audios">

/**
 * Where the flags go in `input` (spec: famS, famV and famK tables). Videos or
 * audios mean `media` mode unless another is asked for (the gateway then
 * refuses it with its own code). In `frame` mode (or no mode: the model's
 * default) the first image is the first frame (`input.image`) and the next,
 * or `--last-frame`, the last (`reference_images[0]`); in `images` and
 * `media` mode every image goes to `reference_images`.
 */
export const placeReferences = (flags: ReferenceFlags, url: (value: string) => string) =>
  Effect.gen(function*() {
    const mode = flags.mode ?? (flags.videos.length + flags.audios.length > 0 ? "media" : undefined)
    const refs = (values: ReadonlyArray<string>) => values.map((value) => ({ url: url(value) }))
    const positional = mode === undefined || mode === "frame"
    if (flags.lastFrame !== undefined && !positional) {
      return yield* new UsageError({
        message: `--last-frame is for frame mode; in ${mode} mode give every image with --image.`
      })
    }
    if (flags.lastFrame !== undefined && flags.images.length !== 1) {
      return yield* new UsageError({ message: "--last-frame needs exactly one --image, the first frame." })
    }
    const images = [...flags.images, ...(flags.lastFrame === undefined ? [] : [flags.lastFrame])]
    const placement: Placement = {
      ...(mode === undefined ? {} : { reference_mode: mode }),
      ...(positional && images.length > 0 ? { image: refs(images.slice(0, 1))[0]! } : {}),
      ...((positional ? images.slice(1) : images).length > 0
        ? { reference_images: refs(positional ? images.slice(1) : images) }
        : {}),
      ...(flags.videos.length > 0 ? { reference_videos: refs(flags.videos) } : {}),
      ...(flags.audios.length > 0 ? { reference_audios: refs(flags.audios) } : {})
    }
    return placement
  })

/**
 * Uploads the local files among the references (URLs are passed on as they
 * are) and returns a function giving each value's URL. Every file is checked
 * to be of the kind its flag takes before any byte is sent.
 */
export const uploadReferences = (options: Common, flags: ReferenceFlags) =>
  Effect.gen(function*() {
    const wanted: Array<readonly [string, UploadKind, string]> = [
      ...flags.images.map((v) => [v, "image", "--image"] as const),
      ...(flags.lastFrame === undefined ? [] : [[flags.lastFrame, "image", "--last-frame"] as const]),
      ...flags.videos.map((v) => [v, "video", "--video"] as const),
      ...flags.audios.map((v) => [v, "audio", "--audio"] as const)
    ]
    const local = [...new Map(wanted.filter(([value]) => !isUrl(value)).map((w) => [w[0], w])).values()]
    for (const [path, kind, flag] of local) {
      const file = yield* describeFile(path)
      if (file.kind !== kind) {
        return yield* new LocalFileError({ path, message: `${flag} takes ${kind} files; this is ${file.mimeType}` })
      }
    }
    const uploaded = yield* uploadWithProgress(options, local.map(([path]) => path))
    const urls = new Map(uploaded.map((u) => [u.file.path, u.url]))
    return (value: string) => urls.get(value) ?? value
  })
