import { Schema } from "effect"

/**
 * The synchronous image endpoints in the OpenAI Images API shape (docs/api.md,
 * Synchronous image endpoints). These are the wire shapes only: each parameter
 * maps onto the image task's field, and the model's capability table decides
 * which values are allowed.
 */

export const ResponseFormat = Schema.Literal("url", "b64_json")
export type ResponseFormat = typeof ResponseFormat.Type

/** The OpenAI clients send `null` for a parameter set to null; it means "not given", as in OpenAI's API. */
const Nullable = <A, I>(schema: Schema.Schema<A, I>) => Schema.optional(Schema.NullOr(schema))

const descriptions = {
  model: "Image model ID (see /v1/models)",
  prompt: "The prompt (`input.prompt` of the image task)",
  n: "Number of images (`output.count`); bounds per model",
  size: "`<width>x<height>` (`output.size`); values per model",
  quality: "Quality level (`output.quality`); values per model",
  output_format: "`png`, `jpeg` or `webp` (`output.format`); values per model",
  response_format: "`url` (default) or `b64_json`"
} as const

/** `POST /v1/images/generations` (JSON). Unknown fields are refused. */
export const ImagesGenerationRequest = Schema.Struct({
  model: Schema.String.annotations({ description: descriptions.model }),
  prompt: Schema.String.annotations({ description: descriptions.prompt }),
  n: Nullable(Schema.Int.annotations({ description: descriptions.n })),
  size: Nullable(Schema.String.annotations({ description: descriptions.size })),
  quality: Nullable(Schema.String.annotations({ description: descriptions.quality })),
  output_format: Nullable(Schema.String.annotations({ description: descriptions.output_format })),
  response_format: Nullable(ResponseFormat.annotations({ description: descriptions.response_format }))
})
export type ImagesGenerationRequest = typeof ImagesGenerationRequest.Type

/** The text fields of `POST /v1/images/edits` (multipart); the files are `image` / `image[]` and `mask`. */
export const ImagesEditFields = Schema.Struct({
  model: Schema.String.annotations({ description: descriptions.model }),
  prompt: Schema.String.annotations({ description: descriptions.prompt }),
  n: Schema.optional(
    Schema.NumberFromString.pipe(Schema.int()).annotations({
      jsonSchema: { type: "string", description: descriptions.n }
    })
  ),
  size: Schema.optional(Schema.String.annotations({ description: descriptions.size })),
  quality: Schema.optional(Schema.String.annotations({ description: descriptions.quality })),
  output_format: Schema.optional(Schema.String.annotations({ description: descriptions.output_format })),
  response_format: Schema.optional(ResponseFormat.annotations({ description: descriptions.response_format }))
})
export type ImagesEditFields = typeof ImagesEditFields.Type

/** The file fields of `POST /v1/images/edits`: `image[]` is how the OpenAI clients send a list of images. */
export const IMAGE_EDIT_FILES = {
  image: "Source image (PNG, JPEG or WebP); repeatable",
  "image[]": "Source images, as the OpenAI clients send a list",
  mask: "Optional mask: transparent pixels mark what to change"
} as const

export const ImagesResponse = Schema.Struct({
  /** Unix seconds at which the images were made (the task's completion). */
  created: Schema.Int,
  data: Schema.Array(Schema.Union(
    Schema.Struct({
      url: Schema.String.annotations({ description: "As the task's result item: its `url_auth` applies" })
    }),
    Schema.Struct({ b64_json: Schema.String.annotations({ description: "The stored result bytes, base64" }) })
  )),
  usage: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})
export type ImagesResponse = typeof ImagesResponse.Type
