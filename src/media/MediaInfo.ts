import { Data, Schema } from "effect"

export const VideoStreamInfo = Schema.Struct({
  codec: Schema.String,
  width: Schema.Int,
  height: Schema.Int,
  pixFmt: Schema.optional(Schema.String),
  profile: Schema.optional(Schema.String)
})
export type VideoStreamInfo = typeof VideoStreamInfo.Type

export const AudioStreamInfo = Schema.Struct({
  codec: Schema.String,
  channels: Schema.Int,
  sampleRate: Schema.Int
})
export type AudioStreamInfo = typeof AudioStreamInfo.Type

/**
 * What a media file really is, read from its content. MP4 and MOV share the
 * demuxer name `mov,mp4,m4a,3gp,3g2,mj2`; `majorBrand` tells them apart
 * (`qt  ` is QuickTime). Cover art of an MP3 is not counted as video.
 */
export const MediaInfo = Schema.Struct({
  /** The demuxer's name list as ffprobe reports it, e.g. `mov,mp4,m4a,3gp,3g2,mj2`, `wav`, `mp3`. */
  formatName: Schema.String,
  formatNames: Schema.Array(Schema.String),
  majorBrand: Schema.optional(Schema.String),
  durationMs: Schema.Int.pipe(Schema.positive()),
  sizeBytes: Schema.optional(Schema.Int),
  video: Schema.optional(VideoStreamInfo),
  audio: Schema.optional(AudioStreamInfo)
})
export type MediaInfo = typeof MediaInfo.Type

/**
 * Why a file could not be described. `unreadable`: not a media file of an
 * accepted format (garbage, a header cut short, a format not allowed);
 * `truncated`: the header promises more samples than the file holds;
 * `no_media`: neither an audio nor a video stream, or no duration;
 * `timeout` and `tool_failed` are the prober's own trouble, not the file's.
 */
export class ProbeError extends Data.TaggedError("ProbeError")<{
  readonly reason: "unreadable" | "truncated" | "no_media" | "timeout" | "tool_failed"
  readonly message: string
}> {}
