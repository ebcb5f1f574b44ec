import type { UpstreamLimits } from "../../src/channel/contract/Adapter.ts"

/**
 * The Luma video models this adapter knows, as data (docs/adapters/luma.md,
 * Models): what each takes, from Luma's own API reference and its official
 * client (`lumaai` 1.19.1, `GenerationCreateParams`). A route's
 * `upstream_model` names one of them; any other stops the start, naming
 * these (a route to a model Luma does not have could only ever fail).
 */

export interface LumaModel {
  /** Seconds it makes, each sent as Luma's string (`"5s"`). */
  readonly durations: ReadonlyArray<number>
  /** `aspect_ratio` values it takes. */
  readonly aspectRatios: ReadonlyArray<string>
  /** `resolution` values it takes: a public model of another resolution cannot be routed to it. */
  readonly resolutions: ReadonlyArray<string>
  /**
   * The soundtrack: Luma's video generations are silent (sound is a separate,
   * paid `POST /generations/{id}/audio` this adapter does not call), and the
   * create has no field for it, so a route takes silent videos only.
   */
  readonly audio: "never"
  /** Whether it takes `keyframes.frame1` (an image as the last frame). */
  readonly lastFrame: boolean
}

/** Luma's `aspect_ratio` enum; `9:21` has no public counterpart, so it is never sent. */
const RATIOS = ["1:1", "16:9", "9:16", "4:3", "3:4", "21:9", "9:21"]
/** Luma's `resolution` enum (`540p` and `4k` have no public counterpart). */
const RESOLUTIONS = ["540p", "720p", "1080p", "4k"]

/** Ray 2 and Ray Flash 2 take the same create: `duration` "5s" or "9s", first and last frame keyframes. */
const ray: LumaModel = {
  durations: [5, 9],
  aspectRatios: RATIOS,
  resolutions: RESOLUTIONS,
  audio: "never",
  lastFrame: true
}

export const MODELS: ReadonlyMap<string, LumaModel> = new Map([
  ["ray-2", ray],
  ["ray-flash-2", ray]
])

/** Seconds as Luma spells them. */
export const durationOf = (seconds: number) => `${seconds}s`

/** Why a route cannot be served, naming the models this adapter knows; undefined when it can. */
export const routeRefusal = (upstreamModel: string): string | undefined =>
  MODELS.has(upstreamModel)
    ? undefined
    : `"${upstreamModel}" is not a Luma video model this adapter knows; it knows ${[...MODELS.keys()].join(", ")}`

/** What a route to `upstreamModel` cannot take or always does; undefined for a model it does not know. */
export const routeLimits = (upstreamModel: string): UpstreamLimits | undefined => {
  const model = MODELS.get(upstreamModel)
  if (model === undefined) return undefined
  return {
    durations: model.durations,
    aspectRatios: model.aspectRatios,
    resolutions: model.resolutions,
    audio: model.audio,
    lastFrame: model.lastFrame
  }
}
