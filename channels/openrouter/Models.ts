import type { UpstreamLimits } from "../../src/channel/contract/Adapter.ts"

/**
 * The OpenRouter video models this adapter knows, as data
 * (docs/adapters/openrouter.md, Models). OpenRouter serves every model
 * through one create (`POST /videos`), but each model takes its own
 * durations, aspect ratios, resolutions, frames and soundtrack, which its
 * entry of `GET /videos/models` lists (`supported_durations`,
 * `supported_aspect_ratios`, `supported_resolutions`,
 * `supported_frame_images`, `generate_audio`, `seed`); an out-of-set value
 * is answered 400 there. This table keeps the part a route needs before
 * anything is sent: `routeLimits` narrows the public model to it, so a
 * request the model cannot take is a 400 at creation, never a failed,
 * refunded task. A model missing here cannot be routed (`checkRoute` stops
 * the start and names the ones it knows).
 */

export interface VideoModel {
  /** The family whose public models may route here. */
  readonly family: "famV" | "famK"
  /** `supported_durations`, in seconds. */
  readonly durations: ReadonlyArray<number>
  /** `supported_aspect_ratios`. */
  readonly aspectRatios: ReadonlyArray<string>
  /** `supported_resolutions`: the public model's resolution must be one of them. */
  readonly resolutions: ReadonlyArray<string>
  /**
   * Whether `resolution` is sent: false where the model id fixes it (Kling's
   * `-std` is 720p, `-pro` 1080p) and the request says nothing more.
   */
  readonly sendsResolution: boolean
  /** `supported_frame_images` has `last_frame`. */
  readonly lastFrame: boolean
  /** `generate_audio`: the model can make a soundtrack, switched by the request's `generate_audio`. */
  readonly audio: boolean
  /** `seed`: the model takes the top-level `seed` (famV's `provider_options.famV.seed`). */
  readonly seed: boolean
  /** Reference images (`input_references`), the family's `images` mode, up to this many; absent: none. */
  readonly referenceImages?: number | undefined
}

const range = (from: number, to: number) => Array.from({ length: to - from + 1 }, (_, i) => from + i)

const VEO = {
  family: "famV",
  durations: [4, 6, 8],
  aspectRatios: ["16:9", "9:16"],
  resolutions: ["720p", "1080p"],
  sendsResolution: true,
  audio: true,
  seed: true
} as const

const KLING_3 = {
  family: "famK",
  durations: range(3, 15),
  aspectRatios: ["16:9", "9:16", "1:1"],
  sendsResolution: false,
  lastFrame: true,
  audio: true,
  seed: false
} as const

export const MODELS: Readonly<Record<string, VideoModel>> = {
  // Veo 3.1: first and last frame, up to three reference images (Google's Veo 3.1 model card).
  "google/veo-3.1": { ...VEO, lastFrame: true, referenceImages: 3 },
  // Veo 3.1 Fast: first and last frame, no reference images.
  "google/veo-3.1-fast": { ...VEO, lastFrame: true },
  // Veo 3.1 Lite: 4, 6 or 8 s at 720p or 1080p, 16:9 or 9:16 (OpenRouter's text-to-video cookbook);
  // a first frame only, since no source lists a last frame for it.
  "google/veo-3.1-lite": { ...VEO, lastFrame: false },
  // Kling 3.0 Standard (720p) and Pro (1080p): 3 to 15 s, first and last frame, an optional soundtrack.
  "kwaivgi/kling-v3.0-std": { ...KLING_3, resolutions: ["720p"] },
  "kwaivgi/kling-v3.0-pro": { ...KLING_3, resolutions: ["1080p"] }
}

export const modelOf = (upstreamModel: string): VideoModel | undefined =>
  Object.hasOwn(MODELS, upstreamModel) ? MODELS[upstreamModel] : undefined

/** Why a route cannot be served (for the boot error), or undefined: an image route, an unknown model, another family's. */
export const routeProblem = (family: string, kind: string, upstreamModel: string): string | undefined => {
  if (kind !== "video") return "the openrouter adapter serves video models only"
  if (modelOf(upstreamModel)?.family === family) return undefined
  const known = Object.entries(MODELS).filter(([, m]) => m.family === family).map(([id]) => id)
  return `the openrouter adapter does not know this model for ${family}; it knows ${
    known.length === 0 ? "none" : known.join(", ")
  }`
}

/** What a route to a known model cannot take (its durations, ratios, resolutions, last frame): the route's defaults. */
export const routeLimits = (upstreamModel: string): UpstreamLimits | undefined => {
  const model = modelOf(upstreamModel)
  if (model === undefined) return undefined
  return {
    durations: model.durations,
    aspectRatios: model.aspectRatios,
    resolutions: model.resolutions,
    ...(model.audio ? {} : { audio: "never" as const }),
    lastFrame: model.lastFrame
  }
}
