/**
 * The Replicate models this adapter knows, as data (docs/adapters/replicate.md,
 * Endpoints): per family, which input field of the model's schema each part
 * of the unified request goes to, and what the model cannot take. A field
 * left out means the model has none: a request that needs it is refused
 * before anything is sent (Inputs.ts). Input names and types as the models'
 * API schemas on replicate.com define them (checked 2026-11-26).
 *
 * Every video model here takes text-only and first-frame requests on the same
 * model (Replicate does not split them), so none has an image sibling. A
 * channel's `models` setting adds models (or replaces these) as
 * configuration (Configured.ts), so a new family reaches Replicate without a
 * change here.
 */

/** How the unified duration is written: Replicate's video models take integer seconds. */
export type DurationField =
  | { readonly field: string; readonly min: number; readonly max: number }
  | { readonly field: string; readonly values: ReadonlyArray<number> }

export interface VideoEndpoint {
  readonly kind: "video"
  /** The family whose requests its input was written for; undefined: any family's. */
  readonly family?: string | undefined
  readonly prompt: string
  /** The first frame (`input.image`, or the first image in frame mode). */
  readonly firstFrame: string
  /** The last frame (the second image in frame mode). */
  readonly lastFrame?: string | undefined
  /** Reference images (the family's `images` mode), up to `max`. */
  readonly referenceImages?: { readonly field: string; readonly max: number } | undefined
  readonly duration: DurationField
  /** The aspect ratio; `withFirstFrame` false where the model takes the frame's own shape instead; undefined: no field. */
  readonly aspectRatio?: { readonly field: string; readonly withFirstFrame: boolean } | undefined
  /** The public model's resolution, as the model's own words for it. */
  readonly resolution?: { readonly field: string; readonly values: Readonly<Record<string, string>> } | undefined
  /** The audio switch; absent where the model makes silent videos only (or, with `alwaysSound`, always has sound). */
  readonly audio?: string | undefined
  /** No audio switch, and every video has a soundtrack (Wan's). */
  readonly alwaysSound?: boolean | undefined
  /** It takes no request without a first frame (an image-to-video model). */
  readonly firstFrameRequired?: boolean | undefined
  /** The model's `provider_options` by name → the model's field; any other option is refused. */
  readonly options: Readonly<Record<string, string>>
  /** Sent as is with every prediction. */
  readonly fixed?: Readonly<Record<string, unknown>> | undefined
}

export interface ImageEndpoint {
  readonly kind: "image"
  readonly family: "image"
  readonly operations: ReadonlyArray<"generation" | "edit">
  readonly prompt: string
  /** The source images of an edit, as a list of URIs, up to `max`. */
  readonly images: { readonly field: string; readonly max: number }
  /** The aspect ratio of the public size (`1536x1024` → `3:2`), one of `values`. */
  readonly aspectRatio: { readonly field: string; readonly values: ReadonlyArray<string> }
  /** The output format, as the model spells each of ours; a format missing here is refused. */
  readonly format: { readonly field: string; readonly values: Readonly<Record<string, string>> }
}

export type Endpoint = VideoEndpoint | ImageEndpoint

/** The models a channel knows: these, and its `models` setting's (Configured.ts). */
export type Endpoints = ReadonlyMap<string, Endpoint>

const BUILT_IN_TABLE: Readonly<Record<string, Endpoint>> = {
  // https://replicate.com/bytedance/seedance-1-pro/api/schema
  "bytedance/seedance-1-pro": {
    kind: "video",
    family: "famS",
    prompt: "prompt",
    firstFrame: "image",
    lastFrame: "last_frame_image",
    duration: { field: "duration", min: 2, max: 12 },
    // Ignored by the model with an image, which gives the shape: not sent then.
    aspectRatio: { field: "aspect_ratio", withFirstFrame: false },
    resolution: { field: "resolution", values: { "480p": "480p", "720p": "720p", "1080p": "1080p" } },
    options: { seed: "seed", camera_fixed: "camera_fixed" },
    fixed: { fps: 24 }
  },
  // https://replicate.com/kwaivgi/kling-v3-video/api/schema
  "kwaivgi/kling-v3-video": {
    kind: "video",
    family: "famK",
    prompt: "prompt",
    firstFrame: "start_image",
    lastFrame: "end_image",
    duration: { field: "duration", min: 3, max: 15 },
    aspectRatio: { field: "aspect_ratio", withFirstFrame: false },
    resolution: { field: "mode", values: { "720p": "standard", "1080p": "pro" } },
    audio: "generate_audio",
    options: {}
  },
  // https://replicate.com/google/veo-3.1/api/schema
  "google/veo-3.1": {
    kind: "video",
    family: "famV",
    prompt: "prompt",
    firstFrame: "image",
    lastFrame: "last_frame",
    referenceImages: { field: "reference_images", max: 3 },
    duration: { field: "duration", values: [4, 6, 8] },
    aspectRatio: { field: "aspect_ratio", withFirstFrame: true },
    resolution: { field: "resolution", values: { "720p": "720p", "1080p": "1080p" } },
    audio: "generate_audio",
    options: { seed: "seed", negative_prompt: "negative_prompt" }
  },
  // https://replicate.com/google/veo-3.1-fast/api/schema: no reference images.
  "google/veo-3.1-fast": {
    kind: "video",
    family: "famV",
    prompt: "prompt",
    firstFrame: "image",
    lastFrame: "last_frame",
    duration: { field: "duration", values: [4, 6, 8] },
    aspectRatio: { field: "aspect_ratio", withFirstFrame: true },
    resolution: { field: "resolution", values: { "720p": "720p", "1080p": "1080p" } },
    audio: "generate_audio",
    options: { seed: "seed", negative_prompt: "negative_prompt" }
  },
  // https://replicate.com/google/nano-banana/api/schema: generation, and edit with `image_input`.
  "google/nano-banana": {
    kind: "image",
    family: "image",
    operations: ["generation", "edit"],
    prompt: "prompt",
    images: { field: "image_input", max: 10 },
    aspectRatio: {
      field: "aspect_ratio",
      values: ["1:1", "2:3", "3:2", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "21:9"]
    },
    format: { field: "output_format", values: { png: "png", jpeg: "jpg" } }
  }
}

export const BUILT_IN: Endpoints = new Map(Object.entries(BUILT_IN_TABLE))

/** The model part of a route's `upstream_model`: `owner/name` of `owner/name` or `owner/name:version`. */
export const modelOf = (upstreamModel: string) => upstreamModel.split(":", 1)[0]!

/** The version of `owner/name:version`, when the route pins one. */
export const versionOf = (upstreamModel: string): string | undefined => {
  const at = upstreamModel.indexOf(":")
  return at < 0 ? undefined : upstreamModel.slice(at + 1)
}

/**
 * Why a route cannot be served (for the boot error), or undefined: an
 * unknown model, one of another family or kind, or a malformed name.
 */
export const routeProblem = (
  endpoints: Endpoints,
  family: string,
  kind: string,
  upstreamModel: string
): string | undefined => {
  if (!/^[\w.-]+\/[\w.-]+(:[0-9a-f]{64})?$/.test(upstreamModel)) {
    return `not a Replicate model ("owner/name" or "owner/name:version" with a 64-hex version)`
  }
  const fits = (e: Endpoint) =>
    e.kind === kind && (e.kind === "image" ? family === "image" : e.family === undefined || e.family === family)
  const known = [...endpoints].filter(([, e]) => fits(e)).map(([m]) => m)
  if (known.includes(modelOf(upstreamModel))) return undefined
  return `this channel knows no such Replicate model for ${family}; it knows ${
    known.length === 0 ? "none" : known.join(", ")
  }, and a channel's "models" setting adds one (docs/adapters/replicate.md)`
}

/**
 * What a route to a video model cannot take or always does
 * (docs/adapters/replicate.md, What a route takes): the model's durations
 * and resolutions, no soundtrack where it has no audio switch (its videos
 * are silent), no last frame where it has no field for one. The catalog
 * refuses the rest at creation (a resolution, which the public model fixes,
 * at the start); undefined for an image model or one this adapter does not
 * know.
 */
export const routeLimits = (endpoints: Endpoints, upstreamModel: string) => {
  const endpoint = endpoints.get(modelOf(upstreamModel))
  if (endpoint === undefined || endpoint.kind !== "video") return undefined
  const d = endpoint.duration
  return {
    durations: "values" in d ? d.values : Array.from({ length: d.max - d.min + 1 }, (_, i) => d.min + i),
    ...(endpoint.resolution !== undefined ? { resolutions: Object.keys(endpoint.resolution.values) } : {}),
    ...(endpoint.audio === undefined ? { audio: endpoint.alwaysSound ? "always" as const : "never" as const } : {}),
    lastFrame: endpoint.lastFrame !== undefined,
    ...(endpoint.firstFrameRequired ? { firstFrame: "required" as const } : {})
  }
}
