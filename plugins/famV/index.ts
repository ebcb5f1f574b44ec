import type { VideoFamily, VideoModelCapability } from "../../src/catalog/contract/Capabilities.ts"
import { frameMode, imagesMode } from "../../src/catalog/contract/Modes.ts"

/** famV 3.1: text-to-video, first/last frame, and (standard only) a three-image reference mode. */

const frame = frameMode({ min: 0, max: 2 })

/** Standard only, and only with 8 s at 16:9. */
const images = imagesMode({ min: 1, max: 3 }, { durations: [8], aspectRatios: ["16:9"] })

const model = (tier: "standard" | "fast", resolution: "720p" | "1080p"): VideoModelCapability => ({
  id: `provx-famV-3.1-${tier}-${resolution}`,
  range: `provx-famV-3.1-${tier}-*`,
  resolution,
  modes: tier === "standard" ? { frame, images } : { frame },
  default_mode: "frame",
  durations: { values: [4, 6, 8] },
  aspect_ratios: ["16:9", "9:16"],
  default_aspect_ratio: "16:9",
  provider_options: {
    famV: { seed: { type: "integer", min: 0, max: 4_294_967_295 }, negative_prompt: { type: "string" } }
  }
})

const family: VideoFamily = {
  family: "famV",
  type: "video",
  owned_by: "famV",
  models: [model("standard", "720p"), model("standard", "1080p"), model("fast", "720p"), model("fast", "1080p")]
}

export default family
