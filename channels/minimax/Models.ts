import type { RouteToCheck, UpstreamLimits } from "../../src/channel/contract/Adapter.ts"

/**
 * The MiniMax video models this adapter knows (docs/adapters/minimax.md,
 * Models), as data: what each takes, from MiniMax's video generation pages
 * (text-to-video, image-to-video, first-and-last-frame). A route naming any
 * other `upstream_model` stops the start, so a task never meets a model
 * whose fields we would be guessing.
 *
 * - Every model makes 768P (6 or 10 s) and 1080P (6 s only) videos, silent:
 *   the API has no soundtrack field and returns video without audio.
 * - Only MiniMax-Hailuo-02 takes `last_frame_image` (first-and-last-frame
 *   generation supports that model alone).
 * - The API has no aspect-ratio field: a text-to-video is landscape
 *   (768P is 1366x768, 1080P 1920x1080), and with a first frame the frame
 *   gives the shape; so 16:9 is the one ratio a route takes.
 * - MiniMax-Hailuo-2.3-Fast is left out: it is image-to-video only (a first
 *   frame required), which a route's limits cannot say, so a text-only task
 *   could only fail after it was accepted.
 */

/** The family's resolutions (the spec's words) as MiniMax's `resolution` values. */
export const RESOLUTIONS: Readonly<Record<string, string>> = { "720p": "768P", "1080p": "1080P" }

/** The seconds each MiniMax resolution takes. */
export const DURATIONS: Readonly<Record<string, ReadonlyArray<number>>> = { "768P": [6, 10], "1080P": [6] }

export interface UpstreamModel {
  /** The plugin family whose models it serves. */
  readonly family: string
  /** Whether it takes `last_frame_image`. */
  readonly lastFrame: boolean
}

export const MODELS: ReadonlyMap<string, UpstreamModel> = new Map([
  ["MiniMax-Hailuo-02", { family: "famH", lastFrame: true }],
  ["MiniMax-Hailuo-2.3", { family: "famH", lastFrame: false }]
])

/** Why a route cannot go to this adapter (a message naming the models it knows), or undefined when it can. */
export const routeRefusal = (route: RouteToCheck): string | undefined => {
  const known = MODELS.get(route.upstreamModel)
  const names = [...MODELS.keys()].join(", ")
  if (route.kind !== "video") return `the minimax adapter serves video models only (it knows ${names})`
  if (known === undefined) return `is not a MiniMax video model this adapter knows (it knows ${names})`
  if (known.family !== route.family) {
    return `${route.upstreamModel} serves ${known.family}, not ${route.family} (the minimax adapter knows ${names})`
  }
  return undefined
}

/** What the route's upstream model takes (the catalog keeps other requests off the route). */
export const routeLimits = (route: RouteToCheck): UpstreamLimits | undefined => {
  const known = MODELS.get(route.upstreamModel)
  if (known === undefined) return undefined
  return {
    // 10 s exists at 768P only; the family's 1080p model already takes 6 s alone.
    durations: [6, 10],
    aspectRatios: ["16:9"],
    resolutions: Object.keys(RESOLUTIONS),
    audio: "never",
    lastFrame: known.lastFrame
  }
}
