// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import { describe, expect, it } from "vitest"
import { type AspectRatio, type Resolution, videoDimensions } from "../../channels/sandbox/Dimensions.ts"

const expected: Record<Resolution, Record<AspectRatio, [number, number]>> = {
  "480p": {
    "21:9": [1120, 480],
    "16:9": [854, 480],
    "4:3": [640, 480],
    "1:1": [480, 480],
    "3:4": [480, 640],
    "9:16": [480, 854]
  },
  "720p": {
    "21:9": [1680, 720],
    "16:9": [1280, 720],
    "4:3": [960, 720],
    "1:1": [720, 720],
    "3:4": [720, 960],
    "9:16": [720, 1280]
  },
  "1080p": {
    "21:9": [2520, 1080],
    "16:9": [1920, 1080],
    "4:3": [1440, 1080],
    "1:1": [1080, 1080],
    "3:4": [1080, 1440],
    "9:16": [1080, 1920]
  }
}

describe("videoDimensions", () => {
  for (
    const [resolution, byRatio] of Object.entries(expected) as Array<
      [Resolution, Record<AspectRatio, [number, number]>]
    >
  ) {
    for (const [ratio, [width, height]] of Object.entries(byRatio) as Array<[AspectRatio, [number, number]]>) {
      it(`${resolution} ${ratio} → ${width}×${height}`, () => {
        const d = videoDimensions(resolution, ratio)
        expect(d).toEqual({ width, height })
        expect(d.width % 2).toBe(0)
        expect(d.height % 2).toBe(0)
        expect(Math.min(d.width, d.height)).toBe(Number.parseInt(resolution, 10))
        // The shape is the requested one, to within the rounding to an even side.
        const [a, b] = ratio.split(":").map(Number) as [number, number]
        expect(Math.abs(d.width / d.height - a / b)).toBeLessThan(2 / Math.min(d.width, d.height))
      })
    }
  }
})
