/**
 * The Runway models this adapter knows, as data (docs/adapters/runway.md,
 * Models): per model, the create endpoints it has, the `ratio` values each
 * takes, its durations, its soundtrack and its frames. Values as the types
 * of Runway's official SDK (`@runwayml/sdk` 4.20.1, `ImageToVideoCreateParams`
 * and `TextToVideoCreateParams`) spell them, for the API version it sends
 * (Requests.ts, `RUNWAY_VERSION`).
 *
 * Only the models whose input is the unified request's (a prompt, a ratio
 * in pixels, a duration in seconds, first and last frame) are here; the
 * SDK's other video models (hailuo3, seedance2*, wan3*, gemini_omni_flash*,
 * grok_imagine_1_5, happyhorse_1_0, h3_max) take a `resolution` field,
 * aspect words or reference lists of their own, and a route to one stops the
 * start (`routeProblem`). `veo3` is no longer a model the SDK creates with.
 */

/** The unified aspect ratio at the public model's resolution, as Runway's `ratio` (width:height in pixels). */
export const RATIOS: Readonly<Record<string, Readonly<Record<string, string>>>> = {
  "720p": {
    "16:9": "1280:720",
    "9:16": "720:1280",
    "4:3": "1104:832",
    "3:4": "832:1104",
    "1:1": "960:960",
    "21:9": "1584:672"
  },
  "1080p": { "16:9": "1920:1080", "9:16": "1080:1920" }
}

export interface RunwayModel {
  /** `POST /v1/text_to_video`, with the ratios it takes; absent: the model needs a first frame. */
  readonly textToVideo?: { readonly ratios: ReadonlyArray<string> } | undefined
  /** `POST /v1/image_to_video`, with the ratios it takes and whether `promptImage` may carry a `last` frame. */
  readonly imageToVideo: { readonly ratios: ReadonlyArray<string>; readonly lastFrame: boolean }
  readonly durations: ReadonlyArray<number>
  /** `switch`: the `audio` boolean is sent; `never`: its videos are silent (no such field). */
  readonly audio: "switch" | "never"
  /** `provider_options.<family>.<name>` → the model's field; any other option is refused before sending. */
  readonly options: Readonly<Record<string, string>>
}

const GEN4_RATIOS = ["1280:720", "720:1280", "1104:832", "832:1104", "960:960", "1584:672"]
const VEO_RATIOS = ["1280:720", "720:1280", "1080:1920", "1920:1080"]
const range = (min: number, max: number) => Array.from({ length: max - min + 1 }, (_, i) => min + i)

const veo: RunwayModel = {
  textToVideo: { ratios: VEO_RATIOS },
  imageToVideo: { ratios: VEO_RATIOS, lastFrame: true },
  durations: [4, 6, 8],
  audio: "switch",
  options: { seed: "seed", negative_prompt: "negativePrompt" }
}

export const MODELS: Readonly<Record<string, RunwayModel>> = {
  // Image to video only: `promptImage` is required, a first frame only; 5 or 10 s.
  gen4_turbo: {
    imageToVideo: { ratios: GEN4_RATIOS, lastFrame: false },
    durations: [5, 10],
    audio: "never",
    options: { seed: "seed" }
  },
  // Text to video at 1280:720 or 720:1280; image to video with a first frame at any Gen-4 ratio; 2 to 10 s.
  "gen4.5": {
    textToVideo: { ratios: ["1280:720", "720:1280"] },
    imageToVideo: { ratios: GEN4_RATIOS, lastFrame: false },
    durations: range(2, 10),
    audio: "never",
    options: { seed: "seed" }
  },
  "veo3.1": veo,
  "veo3.1_fast": veo
}

export const modelOf = (upstreamModel: string): RunwayModel | undefined =>
  Object.hasOwn(MODELS, upstreamModel) ? MODELS[upstreamModel] : undefined

/** Why a route cannot be served (the boot error names the models this adapter knows), or undefined. */
export const routeProblem = (kind: string, upstreamModel: string): string | undefined => {
  if (kind !== "video") return "the runway adapter serves video models only"
  if (modelOf(upstreamModel) !== undefined) return undefined
  return `the runway adapter does not know this Runway model; it knows ${Object.keys(MODELS).join(", ")}`
}

/** The ratios every endpoint of the model takes (a request may go to either). */
const everywhere = (model: RunwayModel) => (ratio: string) =>
  model.imageToVideo.ratios.includes(ratio) && (model.textToVideo?.ratios.includes(ratio) ?? true)

/** The resolutions the model makes: those with a ratio every endpoint takes. */
const resolutionsOf = (model: RunwayModel) =>
  Object.keys(RATIOS).filter((resolution) => Object.values(RATIOS[resolution]!).some(everywhere(model)))

/** The unified aspect ratios the model takes at every resolution it makes, on every endpoint. */
const aspectRatiosOf = (model: RunwayModel) => {
  const made = resolutionsOf(model)
  const aspects = new Set(made.flatMap((resolution) => Object.keys(RATIOS[resolution]!)))
  return [...aspects].filter((aspect) =>
    made.every((resolution) => {
      const ratio = RATIOS[resolution]![aspect]
      return ratio !== undefined && everywhere(model)(ratio)
    })
  )
}

/**
 * What a route to a Runway model cannot take or always does
 * (docs/adapters/runway.md, What a route takes): its durations, the aspect
 * ratios and resolutions its `ratio` values cover, no soundtrack where it
 * has no `audio` switch, no last frame where `promptImage` takes `first` only,
 * and a first frame required where the model has no text-to-video endpoint
 * (`gen4_turbo`): a text-only create is refused at creation, or goes to the
 * model's next route.
 */
export const routeLimits = (upstreamModel: string) => {
  const model = modelOf(upstreamModel)
  if (model === undefined) return undefined
  return {
    durations: model.durations,
    aspectRatios: aspectRatiosOf(model),
    resolutions: resolutionsOf(model),
    ...(model.audio === "never" ? { audio: "never" as const } : {}),
    lastFrame: model.imageToVideo.lastFrame,
    ...(model.textToVideo === undefined ? { firstFrame: "required" as const } : {})
  }
}
