import { Either, Schema } from "effect"
import { MediaInfo, ProbeError } from "./MediaInfo.ts"

/**
 * Demuxers a probe accepts unless told otherwise: the containers uploads may
 * use (MP4/MOV, WAV, MP3). A whitelist also keeps playlist formats (HLS,
 * concat) away, which would make ffprobe open other files or URLs.
 */
export const DEFAULT_PROBE_FORMATS: ReadonlyArray<string> = ["mov", "mp4", "m4a", "3gp", "3g2", "mj2", "wav", "mp3"]

/**
 * `-count_packets` reads the whole file (demuxing only, no decoding): a file
 * cut after its header still has a complete header, and only the packet
 * count shows that samples are missing.
 */
export const ffprobeArgs = (absolutePath: string, formats: ReadonlyArray<string>): Array<string> => [
  "-v",
  "error",
  "-hide_banner",
  "-protocol_whitelist",
  "file",
  "-format_whitelist",
  formats.join(","),
  "-count_packets",
  "-print_format",
  "json",
  "-show_format",
  "-show_streams",
  // The `file:` prefix stops a name like `http:x` or `concat:a|b` being read as a protocol.
  `file:${absolutePath}`
]

/** ffprobe prints most numbers as JSON strings, and omits or writes "N/A" for unknown ones. */
export const Num = Schema.Union(Schema.Number, Schema.String)
const num = (x: number | string | undefined): number | undefined => {
  const n = typeof x === "string" ? Number(x) : x
  return n !== undefined && Number.isFinite(n) ? n : undefined
}

const RawStream = Schema.Struct({
  codec_type: Schema.optional(Schema.String),
  codec_name: Schema.optional(Schema.String),
  profile: Schema.optional(Num),
  width: Schema.optional(Num),
  height: Schema.optional(Num),
  pix_fmt: Schema.optional(Schema.String),
  channels: Schema.optional(Num),
  sample_rate: Schema.optional(Num),
  duration: Schema.optional(Num),
  nb_frames: Schema.optional(Num),
  nb_read_packets: Schema.optional(Num),
  disposition: Schema.optional(Schema.Struct({ attached_pic: Schema.optional(Num) }))
})
type RawStream = typeof RawStream.Type

const RawProbe = Schema.parseJson(Schema.Struct({
  format: Schema.Struct({
    format_name: Schema.String,
    duration: Schema.optional(Num),
    size: Schema.optional(Num),
    tags: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
  }),
  streams: Schema.optionalWith(Schema.Array(RawStream), { default: () => [] })
}))

const fail = (reason: ProbeError["reason"], message: string) => Either.left(new ProbeError({ reason, message }))

/** Turns ffprobe's JSON into a `MediaInfo`, or says why the file is not usable media. */
export const mediaInfoFromFfprobe = (stdout: string): Either.Either<MediaInfo, ProbeError> => {
  const decoded = Schema.decodeUnknownEither(RawProbe)(stdout)
  if (Either.isLeft(decoded)) return fail("unreadable", "the prober's report has no format section")
  const { format, streams } = decoded.right

  const cut = streams.find((s) => {
    const promised = num(s.nb_frames)
    const read = num(s.nb_read_packets)
    return promised !== undefined && read !== undefined && read < promised
  })
  if (cut) {
    return fail(
      "truncated",
      `a ${cut.codec_type ?? "media"} stream holds ${cut.nb_read_packets} of ${cut.nb_frames} packets`
    )
  }

  const isCoverArt = (s: RawStream) => num(s.disposition?.attached_pic) === 1
  const v = streams.find((s) => s.codec_type === "video" && !isCoverArt(s))
  const a = streams.find((s) => s.codec_type === "audio")
  const seconds = num(format.duration) ?? Math.max(0, ...streams.map((s) => num(s.duration) ?? 0))
  const majorBrand = format.tags?.["major_brand"]

  const candidate = {
    formatName: format.format_name,
    formatNames: format.format_name.split(","),
    ...(typeof majorBrand === "string" ? { majorBrand } : {}),
    durationMs: Math.round(seconds * 1000),
    ...(num(format.size) !== undefined ? { sizeBytes: num(format.size) } : {}),
    ...(v
      ? {
        video: {
          codec: v.codec_name,
          width: num(v.width),
          height: num(v.height),
          ...(v.pix_fmt !== undefined ? { pixFmt: v.pix_fmt } : {}),
          ...(v.profile !== undefined ? { profile: String(v.profile) } : {})
        }
      }
      : {}),
    ...(a ? { audio: { codec: a.codec_name, channels: num(a.channels), sampleRate: num(a.sample_rate) } } : {})
  }
  if (!v && !a) return fail("no_media", "the file has neither a video nor an audio stream")
  if (!(candidate.durationMs > 0)) return fail("no_media", "the file has no duration")
  return Schema.decodeUnknownEither(MediaInfo)(candidate).pipe(
    Either.mapLeft(() =>
      new ProbeError({ reason: "unreadable", message: "the file's streams lack a codec, size or sample rate" })
    )
  )
}
