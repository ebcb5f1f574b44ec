import type { AspectRatio, ModeCapability } from "./Capabilities.ts"

/** Builders for the usual shapes of a reference mode, so plugin tables read like the spec's. */

const none = { min: 0, max: 0 }

/** First/last frame: images only, `input.image` first, `reference_images[0]` last. */
export const frameMode = (images: { min: number; max: number }): ModeCapability => ({
  images,
  videos: none,
  audios: none,
  total: images.max,
  positional: true,
  audio_requires_visual: false
})

/** Images as references without positions, in `input.reference_images`. */
export const imagesMode = (
  images: { min: number; max: number },
  only?: { durations?: ReadonlyArray<number>; aspectRatios?: ReadonlyArray<AspectRatio> }
): ModeCapability => ({
  images,
  videos: none,
  audios: none,
  total: images.max,
  positional: false,
  audio_requires_visual: false,
  ...(only?.durations ? { only_durations: only.durations } : {}),
  ...(only?.aspectRatios ? { only_aspect_ratios: only.aspectRatios } : {})
})

/** Images, videos and audios together, each kind and the total with its own ceiling. */
export const mediaMode = (max: {
  images: number
  videos: number
  audios: number
  total: number
  audioRequiresVisual: boolean
}): ModeCapability => ({
  images: { min: 0, max: max.images },
  videos: { min: 0, max: max.videos },
  audios: { min: 0, max: max.audios },
  total: max.total,
  positional: false,
  audio_requires_visual: max.audioRequiresVisual
})
