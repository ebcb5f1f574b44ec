import { Schema } from "effect"

/**
 * The shape of `POST /v1/video/tasks` (spec, Video request fields). The
 * OpenAPI document shows it, and the validator takes its field lists from it;
 * the rules that depend on the model come from the plugin's capability table.
 */
export const ReferenceSource = Schema.Struct({
  url: Schema.String.annotations({ description: "Absolute HTTP or HTTPS URL" }),
  name: Schema.optional(
    Schema.String.annotations({ description: "Unique across all references; `@name` in the prompt" })
  )
})

export const VideoInput = Schema.Struct({
  prompt: Schema.String.annotations({ description: "Non-empty after trimming; at most 1200 Unicode characters" }),
  reference_mode: Schema.optional(Schema.Literal("frame", "media", "images")),
  image: Schema.optional(ReferenceSource),
  reference_images: Schema.optional(Schema.Array(ReferenceSource)),
  reference_videos: Schema.optional(Schema.Array(ReferenceSource)),
  reference_audios: Schema.optional(Schema.Array(ReferenceSource))
})

export const VideoOutput = Schema.Struct({
  duration: Schema.Int.annotations({ description: "Seconds; bounds per model (see /v1/models)" }),
  aspect_ratio: Schema.optional(Schema.String.annotations({ description: "Default 16:9" })),
  generate_audio: Schema.optional(Schema.Boolean.annotations({ description: "Default true" }))
})

export const VideoCreateRequest = Schema.Struct({
  model: Schema.String,
  operation: Schema.Literal("generation"),
  input: VideoInput,
  output: VideoOutput,
  client_reference_id: Schema.optional(Schema.String.annotations({ description: "At most 191 characters" })),
  metadata: Schema.optional(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  provider_options: Schema.optional(
    Schema.Record({ key: Schema.String, value: Schema.Record({ key: Schema.String, value: Schema.Unknown }) })
      .annotations({ description: "Namespaces and fields per model (see /v1/models)" })
  )
})
