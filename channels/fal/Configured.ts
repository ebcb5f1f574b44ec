import { Schema } from "effect"
import { BUILT_IN, type Endpoint, type Endpoints, plain, suffixed, type VideoEndpoint } from "./Endpoints.ts"

/**
 * A channel's own fal endpoints, as configuration (docs/adapters/fal.md,
 * Adding an endpoint): a line of video endpoints, keyed by the endpoint a
 * route names (its text-to-video one), saying where each part of the
 * unified request goes. What is left out takes the rules the built-in
 * endpoints follow: `prompt`, `duration` as a plain string (`"5"`), the
 * caller's `output.generate_audio` as `generate_audio`, the first frame as
 * `image_url` on the image sibling. So routing a new family's model to fal
 * is a few lines of `models.json`, never a change to this adapter:
 *
 * ```json
 * "endpoints": {
 *   "fal-ai/wan-25-preview/text-to-video": {
 *     "family": "famW",
 *     "image": "fal-ai/wan-25-preview/image-to-video",
 *     "durations": [5, 10],
 *     "aspect_ratios": ["16:9", "9:16", "1:1", "4:3", "3:4"],
 *     "resolutions": { "720p": "720p", "1080p": "1080p" },
 *     "audio": "always",
 *     "seed": true, "negative_prompt": true,
 *     "options": { "prompt_extend": "enable_prompt_expansion" }
 *   }
 * }
 * ```
 */
export const EndpointLine = Schema.Struct({
  /** The family whose requests it takes; absent: any family's. */
  family: Schema.optional(Schema.NonEmptyString),
  /** The endpoint a request with a first frame goes to; absent: the same endpoint takes frames. */
  image: Schema.optional(Schema.NonEmptyString),
  /** The endpoint a request with a first and a last frame goes to, where the line has its own. */
  first_last: Schema.optional(Schema.NonEmptyString),
  /** The first frame's field (default `image_url`), and the last frame's where it takes one. */
  first_frame: Schema.optionalWith(Schema.NonEmptyString, { default: () => "image_url" }),
  last_frame: Schema.optional(Schema.NonEmptyString),
  /** Seconds it takes, and how it writes them: `plain` (`"5"`, the default) or `suffixed` (`"5s"`). */
  durations: Schema.NonEmptyArray(Schema.Int.pipe(Schema.positive())),
  duration: Schema.optionalWith(Schema.Literal("plain", "suffixed"), { default: () => "plain" as const }),
  /** Its `aspect_ratio` values; absent where it has no such field. */
  aspect_ratios: Schema.optional(Schema.NonEmptyArray(Schema.NonEmptyString)),
  /** Whether the image endpoint takes `aspect_ratio` too (most take the frame's shape). */
  aspect_ratio_with_frame: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  /** The resolutions it makes and how its `resolution` field spells each (`{ "720p": "768P" }`); absent: no field. */
  resolutions: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.NonEmptyString })),
  /** `switch` (a `generate_audio` field, the default), `always` or `never` (no field; its videos have or lack sound). */
  audio: Schema.optionalWith(Schema.Literal("switch", "always", "never"), { default: () => "switch" as const }),
  seed: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  negative_prompt: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  /** The model's other `provider_options` by name, and the field each goes to. */
  options: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.NonEmptyString }), {
    default: () => ({})
  })
}).annotations({ parseOptions: { onExcessProperty: "error" } })
export type EndpointLine = typeof EndpointLine.Type

export const ConfiguredEndpoints = Schema.Record({ key: Schema.NonEmptyString, value: EndpointLine })
export type ConfiguredEndpoints = typeof ConfiguredEndpoints.Type

/** One configured line as the endpoint entries Requests.ts reads: the text endpoint's, and its siblings'. */
const entriesOf = (text: string, c: EndpointLine): ReadonlyArray<readonly [string, VideoEndpoint]> => {
  const line = {
    text,
    image: c.image ?? text,
    ...(c.first_last !== undefined ? { firstLast: c.first_last } : {})
  }
  const common: VideoEndpoint = {
    kind: "video",
    ...(c.family !== undefined ? { family: c.family } : {}),
    line,
    durations: c.durations,
    duration: c.duration === "plain" ? plain : suffixed,
    ...(c.aspect_ratios !== undefined ? { aspectRatios: c.aspect_ratios } : {}),
    ...(c.resolutions !== undefined ? { resolutions: c.resolutions } : {}),
    audio: c.audio,
    seed: c.seed,
    negativePrompt: c.negative_prompt,
    options: c.options
  }
  const withFrames: VideoEndpoint = {
    ...common,
    firstFrame: c.first_frame,
    ...(c.last_frame !== undefined ? { lastFrame: c.last_frame } : {}),
    ...(c.image !== undefined && !c.aspect_ratio_with_frame ? { aspectRatios: undefined } : {})
  }
  if (c.image === undefined) return [[text, withFrames]]
  return [
    [text, common],
    [c.image, withFrames],
    ...(c.first_last !== undefined
      ? [[c.first_last, { ...withFrames, lastFrame: c.last_frame ?? "end_image_url" }] as const]
      : [])
  ]
}

/** The endpoints a channel knows: the built-in ones, with its configured lines added (or in their place). */
export const endpointsOf = (configured: ConfiguredEndpoints | undefined): Endpoints =>
  configured === undefined || Object.keys(configured).length === 0
    ? BUILT_IN
    : new Map<string, Endpoint>([
      ...BUILT_IN,
      ...Object.entries(configured).flatMap(([text, line]) => entriesOf(text, line))
    ])
