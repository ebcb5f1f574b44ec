import type { AspectRatio, VideoFamily, VideoModelCapability } from "../../src/catalog/contract/Capabilities.ts"
import { frameMode } from "../../src/catalog/contract/Modes.ts"

/**
 * famW 2.5 (a Wan-like family, as Alibaba Model Studio's Wan 2.5 video
 * synthesis documents it): text-to-video, or a first frame (image-to-video
 * takes no last frame); 5 or 10 seconds; a soundtrack made with the video
 * unless asked not to. 480p makes 16:9, 9:16 and 1:1 (832*480, 480*832,
 * 624*624); 720p and 1080p add 4:3 and 3:4.
 */

const frame = frameMode({ min: 0, max: 1 })

const RATIOS: Record<"480p" | "720p" | "1080p", readonly [AspectRatio, ...Array<AspectRatio>]> = {
  "480p": ["16:9", "9:16", "1:1"],
  "720p": ["16:9", "9:16", "1:1", "4:3", "3:4"],
  "1080p": ["16:9", "9:16", "1:1", "4:3", "3:4"]
}

const model = (resolution: "480p" | "720p" | "1080p"): VideoModelCapability => ({
  id: `provy-famW-2.5-${resolution}`,
  range: "provy-famW-2.5-*",
  resolution,
  modes: { frame },
  default_mode: "frame",
  durations: { values: [5, 10] },
  aspect_ratios: RATIOS[resolution],
  default_aspect_ratio: "16:9",
  provider_options: {
    famW: {
      negative_prompt: { type: "string" },
      seed: { type: "integer", min: 0, max: 2_147_483_647 },
      prompt_extend: { type: "boolean" }
    }
  }
})

const family: VideoFamily = {
  family: "famW",
  type: "video",
  owned_by: "famW",
  models: [model("480p"), model("720p"), model("1080p")]
}

export default family
