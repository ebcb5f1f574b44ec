/**
 * The Wan lines of Alibaba Cloud Model Studio (DashScope) this adapter
 * knows, as data (docs/adapters/alibaba.md, Models): each line pairs its
 * text-to-video model with its image-to-video (first frame) one, so one
 * route serves both kinds of request and the adapter picks the upstream
 * model from the request. A route's `upstream_model` names either model of
 * a line; anything else stops the start (`checkRoute`), and the line's
 * durations, resolutions and soundtrack are the route's limits
 * (`routeLimits`), so the catalog refuses at creation what the line
 * cannot make.
 *
 * Sources: the Wan text-to-video and image-to-video API references
 * (https://www.alibabacloud.com/help/en/model-studio/text-to-video-api-reference,
 * https://www.alibabacloud.com/help/en/model-studio/image-to-video-api-reference).
 */

export type Resolution = "480p" | "720p" | "1080p"

export interface WanLine {
  /** The line's name in messages (`wan2.5`). */
  readonly name: string
  /** `model` of a text-only create (`parameters.size`). */
  readonly t2v: string
  /** `model` of a first-frame create (`input.img_url`, `parameters.resolution`). */
  readonly i2v: string
  /** `parameters.duration` values, in seconds. */
  readonly durations: ReadonlyArray<number>
  /** The resolution tiers it makes. */
  readonly resolutions: ReadonlyArray<Resolution>
  /**
   * `switch`: a soundtrack unless `parameters.audio` is false (wan2.5,
   * wan2.6, which document the field); `never`: silent videos, no such field.
   */
  readonly audio: "switch" | "never"
}

export const LINES: ReadonlyArray<WanLine> = [
  {
    name: "wan2.5",
    t2v: "wan2.5-t2v-preview",
    i2v: "wan2.5-i2v-preview",
    durations: [5, 10],
    resolutions: ["480p", "720p", "1080p"],
    audio: "switch"
  },
  {
    name: "wan2.6",
    t2v: "wan2.6-t2v",
    i2v: "wan2.6-i2v",
    durations: [5, 10, 15],
    resolutions: ["720p", "1080p"],
    audio: "switch"
  },
  {
    name: "wan2.2",
    t2v: "wan2.2-t2v-plus",
    i2v: "wan2.2-i2v-plus",
    durations: [5],
    resolutions: ["480p", "1080p"],
    audio: "never"
  }
]

/** The line a route's `upstream_model` names (either of its models), if this adapter knows it. */
export const lineOf = (upstreamModel: string): WanLine | undefined =>
  LINES.find((line) => line.t2v === upstreamModel || line.i2v === upstreamModel)

/**
 * `parameters.size` of a text-to-video create, `width*height`, per
 * resolution tier and aspect ratio, as the text-to-video reference lists
 * them (480P: three ratios; 720P and 1080P add 4:3 and 3:4).
 */
export const SIZES: Readonly<Record<Resolution, Readonly<Record<string, string>>>> = {
  "480p": { "16:9": "832*480", "9:16": "480*832", "1:1": "624*624" },
  "720p": { "16:9": "1280*720", "9:16": "720*1280", "1:1": "960*960", "4:3": "1088*832", "3:4": "832*1088" },
  "1080p": {
    "16:9": "1920*1080",
    "9:16": "1080*1920",
    "1:1": "1440*1440",
    "4:3": "1632*1248",
    "3:4": "1248*1632"
  }
}

/** `parameters.resolution` of an image-to-video create: the tier in capitals (`720P`); the image gives the ratio. */
export const tierOf = (resolution: Resolution) => resolution.toUpperCase()

/** Why a route cannot be served (naming the models this adapter knows), or undefined when it can. */
export const routeRefusal = (family: string, kind: string, upstreamModel: string): string | undefined => {
  const known = LINES.flatMap((line) => [line.t2v, line.i2v]).join(", ")
  if (family !== "famW" || kind !== "video") {
    return `the alibaba adapter serves famW video models only (the Wan models it knows: ${known})`
  }
  if (lineOf(upstreamModel) === undefined) {
    return `"${upstreamModel}" is not a Wan model this adapter knows; set upstream_model to one of ${known}`
  }
  return undefined
}

/** The route's limits from its line (UpstreamLimits): durations, resolutions, soundtrack, no last frame. */
export const routeLimits = (upstreamModel: string) => {
  const line = lineOf(upstreamModel)
  if (line === undefined) return undefined
  return {
    durations: line.durations,
    resolutions: line.resolutions,
    ...(line.audio === "never" ? { audio: "never" as const } : {}),
    // Image-to-video takes a first frame only (the first-and-last-frame models are another API).
    lastFrame: false
  }
}
