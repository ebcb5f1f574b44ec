import { Schema } from "effect"

/**
 * What an image family plugin declares: per model its operations, the output
 * sizes, qualities, formats and counts it accepts, whether it takes a mask,
 * and its limits on input images. Validation, `/v1/models` and billing of
 * image tasks are derived from this table, as for video.
 */

export const ImageOperation = Schema.Literal("generation", "edit")
export type ImageOperation = typeof ImageOperation.Type

export const ImageFormat = Schema.Literal("png", "jpeg", "webp")
export type ImageFormat = typeof ImageFormat.Type

const Size = Schema.String.pipe(Schema.pattern(/^[1-9][0-9]{1,4}x[1-9][0-9]{1,4}$/))

export const ImageModelCapability = Schema.Struct({
  id: Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9._-]*$/)),
  operations: Schema.NonEmptyArray(ImageOperation),
  /** `<width>x<height>` values `output.size` may take. */
  sizes: Schema.NonEmptyArray(Size),
  default_size: Size,
  qualities: Schema.NonEmptyArray(Schema.String),
  default_quality: Schema.String,
  formats: Schema.NonEmptyArray(ImageFormat),
  default_format: ImageFormat,
  count: Schema.Struct({ min: Schema.Int.pipe(Schema.positive()), max: Schema.Int.pipe(Schema.positive()) }),
  /** Whether `edit` accepts a mask (transparent pixels mark what to change). */
  mask: Schema.Boolean,
  input_images: Schema.Struct({
    /** Images an edit may carry. */
    max: Schema.Int.pipe(Schema.positive()),
    /** Bytes per input image (and mask). */
    max_bytes: Schema.Int.pipe(Schema.positive())
  })
}).pipe(
  Schema.filter((m) => {
    if (!m.sizes.includes(m.default_size)) return { path: ["default_size"], message: "must be one of sizes" }
    if (!m.qualities.includes(m.default_quality)) {
      return { path: ["default_quality"], message: "must be one of qualities" }
    }
    if (!m.formats.includes(m.default_format)) return { path: ["default_format"], message: "must be one of formats" }
    if (m.count.min > m.count.max) return { path: ["count"], message: "min must not exceed max" }
    return undefined
  })
)
export type ImageModelCapability = typeof ImageModelCapability.Type

export const ImageFamily = Schema.Struct({
  family: Schema.String,
  type: Schema.Literal("image"),
  owned_by: Schema.String,
  models: Schema.NonEmptyArray(ImageModelCapability)
})
export type ImageFamily = typeof ImageFamily.Type

export const parseSize = (size: string) => {
  const [width, height] = size.split("x").map(Number) as [number, number]
  return { width, height }
}
