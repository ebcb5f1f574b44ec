/**
 * The fal endpoints this adapter knows, as data (docs/adapters/fal.md,
 * Endpoints): what each takes and the input field of each part of the
 * unified request, as `@fal-ai/client` 1.10.1 types them
 * (`src/types/endpoints.d.ts`). A route names one endpoint (any of a line's
 * siblings); Requests.ts sends a request with a first frame to the line's
 * image sibling, and one with a last frame too to its first-and-last-frame
 * sibling where the line has one. A channel's `endpoints` setting adds lines
 * (or replaces these) as configuration (Configured.ts), so a new family
 * reaches fal without a change here.
 */

/** What one video endpoint takes, and under which input field. */
export interface VideoEndpoint {
  readonly kind: "video"
  /** The family whose requests its input was written for; undefined: any family's. */
  readonly family?: string | undefined
  /** The line's siblings, so a route naming any of them reaches the right one. */
  readonly line: VideoLine
  /** Frames it takes: none (text to video), a first one, or a first and a last one. */
  readonly firstFrame?: string | undefined
  readonly lastFrame?: string | undefined
  /**
   * Reference images (the `images` mode): their field, how many it takes,
   * and the tag of the i-th image (0-based) in the prompt, which a
   * reference's `@name` becomes.
   */
  readonly references?:
    | { readonly field: string; readonly max: number; readonly tag?: (i: number) => string }
    | undefined
  /** Seconds it takes, and how it spells them (`"5"`, `"4s"`). */
  readonly durations: ReadonlyArray<number>
  readonly duration: (seconds: number) => string
  /** `aspect_ratio` values it takes; undefined when the frame gives the ratio (no field). */
  readonly aspectRatios?: ReadonlyArray<string> | undefined
  /** The resolutions it makes (the public model's, `720p`) and how its `resolution` field spells each; undefined when it has no such field. */
  readonly resolutions?: Readonly<Record<string, string>> | undefined
  /**
   * The soundtrack: `switch` where the endpoint has a `generate_audio` field
   * (the caller's `output.generate_audio` is sent), `always` where it has
   * none and its videos always have sound, `never` where it has none and its
   * videos are silent. Without the switch a caller's choice cannot be sent,
   * so a route to it takes only the one the endpoint makes (`limitsOf`).
   */
  readonly audio: "switch" | "always" | "never"
  /** Optional fields it has: `seed`, `negative_prompt`, and the family's other options. */
  readonly seed: boolean
  readonly negativePrompt: boolean
  /** The model's `provider_options` (beyond seed and negative_prompt), by name, and the field each goes to. */
  readonly options: Readonly<Record<string, string>>
}

export interface VideoLine {
  readonly text: string
  readonly image: string
  readonly firstLast?: string | undefined
  /** The reference-images endpoint, where the line has one. */
  readonly references?: string | undefined
}

/** An image model: generation and edit endpoints. */
export interface ImageEndpoint {
  readonly kind: "image"
  readonly family: "image"
  readonly generation: string
  readonly edit: string
  /** The input images' field of the edit endpoint (data URIs). */
  readonly images: string
  /** At most this many images per request (`num_images`). */
  readonly maxCount: number
  readonly formats: ReadonlyArray<string>
  /** `aspect_ratio` values it takes: a unified size `WxH` is sent as the ratio it reduces to. */
  readonly aspectRatios: ReadonlyArray<string>
}

export type Endpoint = VideoEndpoint | ImageEndpoint

export const plain = (seconds: number) => String(seconds)
export const suffixed = (seconds: number) => `${seconds}s`
/** Resolutions fal spells as the public models do. */
const same = (...names: ReadonlyArray<string>) => Object.fromEntries(names.map((n) => [n, n]))
const range = (min: number, max: number) => Array.from({ length: max - min + 1 }, (_, i) => min + i)

/**
 * Kling 3.0 Pro and Standard (famK): `duration` "3".."15"; image-to-video
 * takes no aspect ratio (the frame gives it). Kling O3 Pro (famK omni):
 * the same without `negative_prompt` and `cfg_scale`, with up to four
 * reference images named `@Image1`… in the prompt.
 */
const klingLine = (prefix: string, references?: string): VideoLine => ({
  text: `${prefix}/text-to-video`,
  image: `${prefix}/image-to-video`,
  ...(references !== undefined ? { references } : {})
})
const klingV3Pro = klingLine("fal-ai/kling-video/v3/pro")
const klingV3Standard = klingLine("fal-ai/kling-video/v3/standard")
const klingO3Pro = klingLine("fal-ai/kling-video/o3/pro", "fal-ai/kling-video/o3/pro/reference-to-video")
const kling = (line: VideoLine) =>
  ({
    kind: "video",
    family: "famK",
    line,
    durations: range(3, 15),
    duration: plain,
    audio: "switch",
    seed: false,
    negativePrompt: true,
    options: { cfg_scale: "cfg_scale" }
  }) as const
const klingO3 = {
  ...kling(klingO3Pro),
  negativePrompt: false,
  options: {}
} as const
const KLING_RATIOS = ["16:9", "9:16", "1:1"]

/** Seedance 1.5 Pro (famS): `duration` "4".."12", `resolution`, `camera_fixed`, `seed`. */
const seedanceV15Pro: VideoLine = {
  text: "fal-ai/bytedance/seedance/v1.5/pro/text-to-video",
  image: "fal-ai/bytedance/seedance/v1.5/pro/image-to-video"
}
const seedance = {
  kind: "video",
  family: "famS",
  line: seedanceV15Pro,
  durations: range(4, 12),
  duration: plain,
  aspectRatios: ["21:9", "16:9", "4:3", "1:1", "3:4", "9:16"],
  resolutions: same("480p", "720p", "1080p"),
  audio: "switch",
  seed: true,
  negativePrompt: false,
  options: { camera_fixed: "camera_fixed" }
} as const

/** Veo 3.1 and 3.1 Fast (famV): `duration` "4s"/"6s"/"8s", `resolution`, separate first-and-last-frame endpoints. */
const veoLine = (prefix: string, references?: string): VideoLine => ({
  text: prefix,
  image: `${prefix}/image-to-video`,
  firstLast: `${prefix}/first-last-frame-to-video`,
  ...(references !== undefined ? { references } : {})
})
const veo = (line: VideoLine) =>
  ({
    kind: "video",
    family: "famV",
    line,
    durations: [4, 6, 8],
    duration: suffixed,
    aspectRatios: ["16:9", "9:16"],
    resolutions: same("720p", "1080p"),
    audio: "switch",
    seed: true,
    negativePrompt: true,
    options: {}
  }) as const
const veo31 = veoLine("fal-ai/veo3.1", "fal-ai/veo3.1/reference-to-video")
const veo31Fast = veoLine("fal-ai/veo3.1/fast")

/** Nano Banana (image): `num_images`, `output_format`, `aspect_ratio`; edit takes `image_urls`. */
const nanoBanana: ImageEndpoint = {
  kind: "image",
  family: "image",
  generation: "fal-ai/nano-banana",
  edit: "fal-ai/nano-banana/edit",
  images: "image_urls",
  maxCount: 4,
  formats: ["png", "jpeg", "webp"],
  aspectRatios: ["21:9", "16:9", "3:2", "4:3", "5:4", "1:1", "4:5", "3:4", "2:3", "9:16"]
}

const videoEndpoints: ReadonlyArray<readonly [string, VideoEndpoint]> = [
  ...[klingV3Pro, klingV3Standard].flatMap((line): ReadonlyArray<readonly [string, VideoEndpoint]> => [
    [line.text, { ...kling(line), aspectRatios: KLING_RATIOS }],
    [line.image, { ...kling(line), firstFrame: "start_image_url", lastFrame: "end_image_url" }]
  ]),
  [klingO3Pro.text, { ...klingO3, aspectRatios: KLING_RATIOS }],
  [klingO3Pro.image, { ...klingO3, firstFrame: "image_url", lastFrame: "end_image_url" }],
  [klingO3Pro.references!, {
    ...klingO3,
    aspectRatios: KLING_RATIOS,
    references: { field: "image_urls", max: 4, tag: (i) => `@Image${i + 1}` }
  }],
  [seedanceV15Pro.text, seedance],
  [seedanceV15Pro.image, { ...seedance, firstFrame: "image_url", lastFrame: "end_image_url" }],
  ...[veo31, veo31Fast].flatMap((line): ReadonlyArray<readonly [string, VideoEndpoint]> => [
    [line.text, veo(line)],
    // The image endpoint also takes `auto` (the frame's ratio); the unified request always names one.
    [line.image, { ...veo(line), firstFrame: "image_url" }],
    [line.firstLast!, { ...veo(line), firstFrame: "first_frame_url", lastFrame: "last_frame_url" }]
  ]),
  // Veo 3.1 with up to three reference images: 8 s only, and no seed or negative prompt.
  [veo31.references!, {
    ...veo(veo31),
    durations: [8],
    seed: false,
    negativePrompt: false,
    references: { field: "image_urls", max: 3 }
  }]
]

/** The endpoints a channel knows: these, and its `endpoints` setting's lines (Configured.ts). */
export type Endpoints = ReadonlyMap<string, Endpoint>

export const BUILT_IN: Endpoints = new Map<string, Endpoint>([
  ...videoEndpoints,
  [nanoBanana.generation, nanoBanana],
  [nanoBanana.edit, nanoBanana]
])

/**
 * The queue app of an endpoint id: `owner/alias` (or `namespace/owner/alias`),
 * where fal's status, result and cancel URLs live: they drop the subpath.
 */
export const appOf = (endpoint: string) => {
  const parts = endpoint.split("/")
  return parts.slice(0, parts[0] === "workflows" || parts[0] === "comfy" ? 3 : 2).join("/")
}

/** Every queue app of a channel's endpoints: a webhook names only the request id, so it may be any of them. */
export const appsOf = (endpoints: Endpoints): ReadonlyArray<string> => [...new Set([...endpoints.keys()].map(appOf))]

/** Whether an endpoint's input fits a family's requests: its own family, or any where it names none. */
const fits = (endpoint: Endpoint, family: string) =>
  endpoint.kind === "image" ? family === "image" : endpoint.family === undefined || endpoint.family === family

/**
 * Why a route cannot be served, naming the endpoints for its family the
 * channel knows (and the `endpoints` setting that adds one); undefined when
 * it can.
 */
export const routeRefusal = (endpoints: Endpoints, family: string, upstreamModel: string): string | undefined => {
  const endpoint = endpoints.get(upstreamModel)
  if (endpoint !== undefined && fits(endpoint, family)) return undefined
  const known = [...endpoints].filter(([, e]) => fits(e, family)).map(([id]) => id)
  const what = endpoint === undefined
    ? "is not a fal endpoint this channel knows"
    : `was written for ${endpoint.kind === "image" ? "image" : endpoint.family} requests`
  const add = `a channel's "endpoints" setting adds one (docs/adapters/fal.md)`
  return known.length === 0
    ? `${what}; this channel knows no endpoint for ${family} models: ${add}`
    : `${what}; the endpoints for ${family} it knows: ${known.join(", ")}, and ${add}`
}

/**
 * Every endpoint a route naming `endpoint` may send to: its line's siblings
 * (text, image, first-and-last frame, references), or an image model's
 * generation and edit; what a reconciliation lists.
 */
export const siblingsOf = (endpoints: Endpoints) => (endpoint: string): ReadonlyArray<string> => {
  const known = endpoints.get(endpoint)
  if (known === undefined) return [endpoint]
  if (known.kind === "image") return [known.generation, known.edit]
  const line = known.line
  return [line.text, line.image, line.firstLast, line.references].filter((e): e is string => e !== undefined)
}

/**
 * What a route naming a video endpoint cannot take or always does
 * (docs/adapters/fal.md, What a route takes), from its line: the durations,
 * aspect ratios and resolutions of the line's text endpoint (`text`), a
 * soundtrack it always or never makes, and whether the line takes a last
 * frame. The catalog refuses the rest at creation (a resolution, which the
 * model fixes, at the start).
 */
export const limitsOf = (endpoint: VideoEndpoint, text: VideoEndpoint, image: VideoEndpoint | undefined) => ({
  durations: text.durations,
  ...(text.aspectRatios !== undefined ? { aspectRatios: text.aspectRatios } : {}),
  ...(text.resolutions !== undefined ? { resolutions: Object.keys(text.resolutions) } : {}),
  ...(text.audio === "switch" ? {} : { audio: text.audio }),
  lastFrame: endpoint.line.firstLast !== undefined || (image ?? endpoint).lastFrame !== undefined
})

const videoAt = (endpoints: Endpoints, id: string | undefined) => {
  const endpoint = id === undefined ? undefined : endpoints.get(id)
  return endpoint?.kind === "video" ? endpoint : undefined
}

/** `limitsOf` the endpoint a route names; undefined for an image endpoint or one the channel does not know. */
export const routeLimits = (endpoints: Endpoints, upstreamModel: string) => {
  const endpoint = videoAt(endpoints, upstreamModel)
  if (endpoint === undefined) return undefined
  return limitsOf(
    endpoint,
    videoAt(endpoints, endpoint.line.text) ?? endpoint,
    videoAt(endpoints, endpoint.line.image)
  )
}
