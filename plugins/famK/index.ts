import type { VideoFamily, VideoModelCapability } from "../../src/catalog/contract/Capabilities.ts"
import { frameMode, imagesMode } from "../../src/catalog/contract/Modes.ts"

/** famK 3.0: text-to-video with optional first/last frame; omni adds a three-image reference mode. */

const frame = frameMode({ min: 0, max: 2 })
const images = imagesMode({ min: 1, max: 3 })

const model = (variant: "3.0" | "3.0-omni", resolution: "720p" | "1080p"): VideoModelCapability => ({
  id: `provx-famK-${variant}-${resolution}`,
  range: `provx-famK-${variant}-*`,
  resolution,
  modes: variant === "3.0-omni" ? { frame, images } : { frame },
  default_mode: "frame",
  durations: { min: 3, max: 15 },
  aspect_ratios: ["16:9", "9:16"],
  default_aspect_ratio: "16:9",
  max_reference_name_length: 100,
  provider_options: {
    famK: { negative_prompt: { type: "string" }, cfg_scale: { type: "number", min: 0, max: 1 } }
  }
})

const family: VideoFamily = {
  family: "famK",
  type: "video",
  owned_by: "famK",
  models: [model("3.0", "720p"), model("3.0", "1080p"), model("3.0-omni", "720p"), model("3.0-omni", "1080p")]
}

export default family
