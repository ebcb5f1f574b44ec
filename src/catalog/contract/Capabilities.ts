import { Schema } from "effect"

/**
 * The capability table a video family plugin declares. It is data, checked by
 * this schema when the plugin loads; the core derives request validation,
 * error codes, `/v1/models` and billing from it and never names a family.
 */

const Count = Schema.Int.pipe(Schema.nonNegative())

export const Range = Schema.Struct({ min: Count, max: Count })
export type Range = typeof Range.Type

export const ReferenceMode = Schema.Literal("frame", "media", "images")
export type ReferenceMode = typeof ReferenceMode.Type

export const AspectRatio = Schema.Literal("21:9", "16:9", "4:3", "1:1", "3:4", "9:16")
export type AspectRatio = typeof AspectRatio.Type

/** What one reference mode accepts. Image counts include `input.image`. */
export const ModeCapability = Schema.Struct({
  images: Range,
  videos: Range,
  audios: Range,
  /** Ceiling of images + videos + audios. */
  total: Schema.Int.pipe(Schema.positive()),
  /** `frame`: input.image is the first frame, reference_images[0] the last. */
  positional: Schema.Boolean,
  /** Audio references need at least one image or video beside them. */
  audio_requires_visual: Schema.Boolean,
  /** The mode is only valid with these durations / ratios (famV standard `images`). */
  only_durations: Schema.optional(Schema.Array(Schema.Int)),
  only_aspect_ratios: Schema.optional(Schema.Array(AspectRatio))
})
export type ModeCapability = typeof ModeCapability.Type

export const Durations = Schema.Union(
  Schema.Struct({ min: Schema.Int.pipe(Schema.positive()), max: Schema.Int.pipe(Schema.positive()) }),
  Schema.Struct({ values: Schema.NonEmptyArray(Schema.Int.pipe(Schema.positive())) })
)
export type Durations = typeof Durations.Type

export const MediaKind = Schema.Literal("image", "video", "audio")
export type MediaKind = typeof MediaKind.Type

/** Checked on the real bytes of a reference (uploads) or when the engine fetches it. */
export const MediaConstraint = Schema.Struct({
  mime_types: Schema.NonEmptyArray(Schema.String),
  max_bytes: Schema.Int.pipe(Schema.positive()),
  min_duration_s: Schema.optional(Schema.Number),
  max_duration_s: Schema.optional(Schema.Number),
  /** Sum over all references of this kind. */
  max_total_duration_s: Schema.optional(Schema.Number)
})
export type MediaConstraint = typeof MediaConstraint.Type

/** A field of a `provider_options` namespace and the JSON type it takes. */
export const OptionField = Schema.Struct({
  type: Schema.Literal("string", "integer", "number", "boolean"),
  enum: Schema.optional(Schema.Array(Schema.Union(Schema.String, Schema.Number))),
  min: Schema.optional(Schema.Number),
  max: Schema.optional(Schema.Number)
})
export type OptionField = typeof OptionField.Type

export const VideoModelCapability = Schema.Struct({
  id: Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._-]*$/)),
  /** The range of the spec the model belongs to, e.g. `provy-famS-2.0-*`. */
  range: Schema.String,
  resolution: Schema.Literal("480p", "720p", "1080p"),
  modes: Schema.Struct({
    frame: Schema.optional(ModeCapability),
    media: Schema.optional(ModeCapability),
    images: Schema.optional(ModeCapability)
  }),
  /** Mode when the request names none: `frame` for famV and famK; none means text-only or inferred. */
  default_mode: Schema.NullOr(ReferenceMode),
  durations: Durations,
  aspect_ratios: Schema.NonEmptyArray(AspectRatio),
  default_aspect_ratio: AspectRatio,
  /**
   * The soundtrack the model makes: `switch` (the default) as
   * `output.generate_audio` asks, true unless asked; `never` silent videos
   * only, so `generate_audio` defaults to false and true is refused;
   * `always` a soundtrack always, so false is refused.
   */
  audio: Schema.optional(Schema.Literal("switch", "never", "always")),
  /** Longest reference `name` in characters, where the family bounds it. */
  max_reference_name_length: Schema.optional(Schema.Int.pipe(Schema.positive())),
  media: Schema.optional(Schema.Struct({
    image: Schema.optional(MediaConstraint),
    video: Schema.optional(MediaConstraint),
    audio: Schema.optional(MediaConstraint)
  })),
  /** `provider_options` namespaces and their fields. */
  provider_options: Schema.Record({
    key: Schema.String,
    value: Schema.Record({ key: Schema.String, value: OptionField })
  })
})
export type VideoModelCapability = typeof VideoModelCapability.Type

export const VideoFamily = Schema.Struct({
  family: Schema.String,
  type: Schema.Literal("video"),
  owned_by: Schema.String,
  models: Schema.NonEmptyArray(VideoModelCapability)
})
export type VideoFamily = typeof VideoFamily.Type
