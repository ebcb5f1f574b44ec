export type Resolution = "480p" | "720p" | "1080p"
export type AspectRatio = "21:9" | "16:9" | "4:3" | "1:1" | "3:4" | "9:16"

export interface Dimensions {
  readonly width: number
  readonly height: number
}

const LINES: Record<Resolution, number> = { "480p": 480, "720p": 720, "1080p": 1080 }

/** H.264 with yuv420p subsamples chroma 2×2, so both sides must be even. */
const nearestEven = (x: number): number => 2 * Math.round(x / 2)

/**
 * Frame size of a video: the short side is the resolution's line count, the
 * long side follows the aspect ratio (720p 16:9 → 1280×720, 480p 16:9 → 854×480).
 */
export const videoDimensions = (resolution: Resolution, aspectRatio: AspectRatio): Dimensions => {
  const short = LINES[resolution]
  const [a, b] = aspectRatio.split(":").map(Number) as [number, number]
  return a >= b
    ? { width: nearestEven((short * a) / b), height: short }
    : { width: short, height: nearestEven((short * b) / a) }
}
