import type { MediaConstraint, VideoFamily, VideoModelCapability } from "../../src/catalog/contract/Capabilities.ts"
import { frameMode, mediaMode } from "../../src/catalog/contract/Modes.ts"

/** famS: text-to-video, first/last frame and multi-media references (spec, `famS` model ranges). */

const ratios = ["21:9", "16:9", "4:3", "1:1", "3:4", "9:16"] as const

const image: MediaConstraint = { mime_types: ["image/png", "image/jpeg", "image/webp"], max_bytes: 20_000_000 }
const video = (total?: number): MediaConstraint => ({
  mime_types: ["video/mp4", "video/quicktime"],
  max_bytes: 200_000_000,
  min_duration_s: 3,
  max_duration_s: 10,
  ...(total === undefined ? {} : { max_total_duration_s: total })
})
const audio = (total?: number): MediaConstraint => ({
  mime_types: ["audio/mpeg", "audio/wav"],
  max_bytes: 15_000_000,
  min_duration_s: 2,
  max_duration_s: 15,
  ...(total === undefined ? {} : { max_total_duration_s: total })
})

const providerOptions = {
  famS: { seed: { type: "integer" as const, min: 0, max: 2_147_483_647 }, camera_fixed: { type: "boolean" as const } }
}

const model = (
  id: string,
  range: string,
  resolution: VideoModelCapability["resolution"],
  rest: Pick<VideoModelCapability, "modes" | "durations" | "media">
): VideoModelCapability => ({
  id,
  range,
  resolution,
  default_mode: null,
  aspect_ratios: ratios,
  default_aspect_ratio: "16:9",
  provider_options: providerOptions,
  ...rest
})

const provx = (resolution: VideoModelCapability["resolution"]) =>
  model(`provx-famS-${resolution}`, "provx-famS-*", resolution, {
    modes: {
      frame: frameMode({ min: 0, max: 2 }),
      media: mediaMode({ images: 9, videos: 3, audios: 3, total: 12, audioRequiresVisual: false })
    },
    durations: { min: 4, max: 15 },
    // Per-file limits as for the provy ranges; totals for this range are not in the spec.
    media: { image, video: video(), audio: audio() }
  })

const provy20 = (version: "2.0" | "2.0-fast", resolution: VideoModelCapability["resolution"]) =>
  model(`provy-famS-${version}-${resolution}`, `provy-famS-${version}-*`, resolution, {
    modes: { media: mediaMode({ images: 4, videos: 3, audios: 1, total: 8, audioRequiresVisual: true }) },
    durations: { min: 4, max: 15 },
    media: { image, video: video(15), audio: audio(15) }
  })

const provy25 = (resolution: VideoModelCapability["resolution"]) =>
  model(`provy-famS-2.5-${resolution}`, "provy-famS-2.5-*", resolution, {
    modes: {
      frame: frameMode({ min: 1, max: 2 }),
      media: mediaMode({ images: 30, videos: 10, audios: 10, total: 50, audioRequiresVisual: true })
    },
    durations: { min: 4, max: 30 },
    media: { image, video: video(30.2), audio: audio(30.2) }
  })

const family: VideoFamily = {
  family: "famS",
  type: "video",
  owned_by: "famS",
  models: [
    provx("720p"),
    provx("1080p"),
    provy20("2.0", "480p"),
    provy20("2.0", "720p"),
    provy20("2.0-fast", "480p"),
    provy20("2.0-fast", "720p"),
    provy25("480p"),
    provy25("720p")
  ]
}

export default family
