import type { ImageFamily, ImageModelCapability } from "../../src/catalog/contract/ImageCapabilities.ts"

/**
 * Image models. The spec leaves sizes, qualities, formats and count bounds
 * open ("not shown"); these are this gateway's declared values.
 */

const MiB = 1024 * 1024

const standard: ImageModelCapability = {
  id: "provx-image-1",
  operations: ["generation", "edit"],
  sizes: ["1024x1024", "1536x1024", "1024x1536", "512x512"],
  default_size: "1024x1024",
  qualities: ["low", "medium", "high"],
  default_quality: "medium",
  formats: ["png", "jpeg", "webp"],
  default_format: "png",
  count: { min: 1, max: 4 },
  mask: true,
  // As many source images as the image edit APIs take.
  input_images: { max: 16, max_bytes: 20 * MiB }
}

const fast: ImageModelCapability = {
  id: "provy-image-1-fast",
  operations: ["generation"],
  sizes: ["512x512", "1024x1024"],
  default_size: "1024x1024",
  qualities: ["standard"],
  default_quality: "standard",
  formats: ["png", "jpeg"],
  default_format: "jpeg",
  count: { min: 1, max: 4 },
  mask: false,
  input_images: { max: 1, max_bytes: 10 * MiB }
}

const family: ImageFamily = { family: "image", type: "image", owned_by: "image", models: [standard, fast] }

export default family
