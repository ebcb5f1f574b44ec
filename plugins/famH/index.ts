import type { VideoFamily, VideoModelCapability } from "../../src/catalog/contract/Capabilities.ts"
import { frameMode } from "../../src/catalog/contract/Modes.ts"

/**
 * famH 02 (a Hailuo-like family, as MiniMax documents Hailuo 02 video
 * generation): text-to-video, a first frame, or a first and a last frame;
 * silent videos only (`audio: "never"`, so `output.generate_audio` defaults
 * to false and true is refused). 768p ("768P", 1366x768 landscape) takes 6
 * or 10 seconds, 1080p 6 only. A text-to-video is landscape; with a frame,
 * the frame gives the shape, so the table lists 16:9 alone.
 */

const frame = frameMode({ min: 0, max: 2 })

const model = (resolution: "720p" | "1080p"): VideoModelCapability => ({
  id: `provx-famH-02-${resolution === "720p" ? "768p" : "1080p"}`,
  range: "provx-famH-02-*",
  // 768P is reported as the 720p tier: the spec's resolutions are 480p, 720p and 1080p.
  resolution,
  modes: { frame },
  default_mode: "frame",
  durations: resolution === "1080p" ? { values: [6] } : { values: [6, 10] },
  aspect_ratios: ["16:9"],
  default_aspect_ratio: "16:9",
  audio: "never",
  provider_options: {
    famH: { prompt_optimizer: { type: "boolean" }, fast_pretreatment: { type: "boolean" } }
  }
})

const family: VideoFamily = {
  family: "famH",
  type: "video",
  owned_by: "famH",
  models: [model("720p"), model("1080p")]
}

export default family
