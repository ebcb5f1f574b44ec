import { Schema } from "effect"
import { BUILT_IN, type Endpoint, type Endpoints, type VideoEndpoint } from "./Endpoints.ts"

/**
 * A channel's own Replicate video models, as configuration
 * (docs/adapters/replicate.md, Adding a model), keyed by `owner/name`:
 * which input field of the model's API schema each part of the unified
 * request goes to. What is left out takes the rules the built-in models
 * follow: `prompt`, the first frame as `image`, the duration as integer
 * seconds in `duration`, the ratio in `aspect_ratio` (not sent with a first
 * frame, whose shape the model takes), no audio switch (silent videos). So
 * routing a new family's model to Replicate is a few lines of
 * `models.json`, never a change to this adapter:
 *
 * ```json
 * "models": {
 *   "minimax/hailuo-02": {
 *     "family": "famH",
 *     "first_frame": "first_frame_image",
 *     "last_frame": "last_frame_image",
 *     "durations": [6, 10],
 *     "aspect_ratio_field": null,
 *     "resolution": { "field": "resolution", "values": { "720p": "768p", "1080p": "1080p" } },
 *     "options": { "prompt_optimizer": "prompt_optimizer" }
 *   }
 * }
 * ```
 */
export const ModelEntry = Schema.Struct({
  /** The family whose requests it takes; absent: any family's. */
  family: Schema.optional(Schema.NonEmptyString),
  prompt: Schema.optionalWith(Schema.NonEmptyString, { default: () => "prompt" }),
  first_frame: Schema.optionalWith(Schema.NonEmptyString, { default: () => "image" }),
  /** The last frame's field, where the model takes one. */
  last_frame: Schema.optional(Schema.NonEmptyString),
  /** The reference images' list field and how many it takes, where the model has one. */
  reference_images: Schema.optional(Schema.Struct({
    field: Schema.NonEmptyString,
    max: Schema.Int.pipe(Schema.positive())
  })),
  /** Seconds it takes (a list, or `{ "min", "max" }`), sent as integers in `duration_field`. */
  durations: Schema.Union(
    Schema.NonEmptyArray(Schema.Int.pipe(Schema.positive())),
    Schema.Struct({ min: Schema.Int.pipe(Schema.positive()), max: Schema.Int.pipe(Schema.positive()) })
  ),
  duration_field: Schema.optionalWith(Schema.NonEmptyString, { default: () => "duration" }),
  /** The ratio's field; `null` where the model has none (the frame, or the model, gives the shape). */
  aspect_ratio_field: Schema.optionalWith(Schema.NullOr(Schema.NonEmptyString), { default: () => "aspect_ratio" }),
  /** Whether the ratio is sent with a first frame too (most models take the frame's shape). */
  aspect_ratio_with_frame: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  /** The resolutions it makes and its field's word for each (`{ "field": "mode", "values": { "1080p": "pro" } }`). */
  resolution: Schema.optional(Schema.Struct({
    field: Schema.NonEmptyString,
    values: Schema.Record({ key: Schema.String, value: Schema.NonEmptyString })
  })),
  /** The audio switch's field; absent where the model has none: its videos are silent, or always have sound. */
  audio: Schema.optional(Schema.NonEmptyString),
  /** Without an audio switch: whether every video has a soundtrack (Wan's), rather than none. */
  always_sound: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  /** Whether it takes no request without a first frame (an image-to-video model). */
  first_frame_required: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  /** The model's `provider_options` by name, and the field each goes to. */
  options: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.NonEmptyString }), {
    default: () => ({})
  }),
  /** Sent as is with every prediction. */
  fixed: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
}).annotations({ parseOptions: { onExcessProperty: "error" } })
export type ModelEntry = typeof ModelEntry.Type

export const ConfiguredModels = Schema.Record({
  key: Schema.String.pipe(Schema.pattern(/^[\w.-]+\/[\w.-]+$/)),
  value: ModelEntry
})
export type ConfiguredModels = typeof ConfiguredModels.Type

const entryOf = (m: ModelEntry): VideoEndpoint => ({
  kind: "video",
  ...(m.family !== undefined ? { family: m.family } : {}),
  prompt: m.prompt,
  firstFrame: m.first_frame,
  ...(m.last_frame !== undefined ? { lastFrame: m.last_frame } : {}),
  ...(m.reference_images !== undefined ? { referenceImages: m.reference_images } : {}),
  duration: Array.isArray(m.durations)
    ? { field: m.duration_field, values: m.durations }
    : { field: m.duration_field, ...(m.durations as { min: number; max: number }) },
  ...(m.aspect_ratio_field !== null
    ? { aspectRatio: { field: m.aspect_ratio_field, withFirstFrame: m.aspect_ratio_with_frame } }
    : {}),
  ...(m.resolution !== undefined ? { resolution: m.resolution } : {}),
  ...(m.audio !== undefined ? { audio: m.audio } : {}),
  ...(m.always_sound ? { alwaysSound: true } : {}),
  ...(m.first_frame_required ? { firstFrameRequired: true } : {}),
  options: m.options,
  ...(m.fixed !== undefined ? { fixed: m.fixed } : {})
})

/** The models a channel knows: the built-in ones, with its configured ones added (or in their place). */
export const endpointsOf = (configured: ConfiguredModels | undefined): Endpoints =>
  configured === undefined || Object.keys(configured).length === 0
    ? BUILT_IN
    : new Map<string, Endpoint>([...BUILT_IN, ...Object.entries(configured).map(([m, e]) => [m, entryOf(e)] as const)])
