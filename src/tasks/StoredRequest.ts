import { Either, ParseResult, Schema } from "effect"
import { AspectRatio, ReferenceMode } from "../catalog/contract/Capabilities.ts"
import { ImageFormat, ImageOperation } from "../catalog/contract/ImageCapabilities.ts"
import type { ImageSource, ValidImageRequest, ValidVideoRequest } from "../catalog/contract/Requests.ts"
import type { TaskKind } from "./Task.ts"

/**
 * The validated request as the task row stores it (`tasks.request`, with
 * `tasks.request_version`). A queued task may be claimed by a worker of
 * another release than the API replica that wrote it, so a worker decodes
 * the stored request with the Schema of its version instead of trusting it:
 * a request it can read runs, one it cannot fails with a clear error and
 * its refund, never a crash in the middle of a generation.
 *
 * Changing what is stored means a new version: add its Schema here, keep the
 * old one with an upgrade to the new shape, and bump `CURRENT_VERSION`.
 * Upgrade workers before API replicas, so no worker meets a version newer
 * than its own.
 */

const Reference = Schema.Struct({ url: Schema.String, name: Schema.optional(Schema.String) })
const Metadata = Schema.NullOr(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
const ProviderOptions = Schema.Record({
  key: Schema.String,
  value: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})

const VideoRequestV1 = Schema.Struct({
  model: Schema.String,
  operation: Schema.Literal("generation"),
  prompt: Schema.String,
  mode: Schema.NullOr(ReferenceMode),
  image: Schema.NullOr(Reference),
  referenceImages: Schema.Array(Reference),
  referenceVideos: Schema.Array(Reference),
  referenceAudios: Schema.Array(Reference),
  duration: Schema.Int,
  aspectRatio: AspectRatio,
  generateAudio: Schema.Boolean,
  clientReferenceId: Schema.NullOr(Schema.String),
  metadata: Metadata,
  providerOptions: ProviderOptions
})

const ImageSourceV1 = Schema.Union(
  Schema.Struct({ url: Schema.String }),
  Schema.Struct({ storageKey: Schema.String, mimeType: Schema.String })
)

const ImageRequestV1 = Schema.Struct({
  model: Schema.String,
  operation: ImageOperation,
  prompt: Schema.String,
  images: Schema.Array(ImageSourceV1),
  mask: Schema.NullOr(ImageSourceV1),
  count: Schema.Int,
  size: Schema.String,
  quality: Schema.String,
  format: ImageFormat,
  clientReferenceId: Schema.NullOr(Schema.String),
  metadata: Metadata,
  providerOptions: ProviderOptions
})

// The Schemas and the validators' types must describe the same value, both ways.
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : never) : never
const sameVideo: Same<typeof VideoRequestV1.Type, ValidVideoRequest> = true
const sameImage: Same<typeof ImageRequestV1.Type, ValidImageRequest> = true
const sameSource: Same<typeof ImageSourceV1.Type, ImageSource> = true
void [sameVideo, sameImage, sameSource]

/** The version new task rows are written with. */
export const CURRENT_VERSION = 1

/** Per kind and version, how a stored request becomes the current shape. */
const decoders = {
  video: { 1: Schema.decodeUnknownEither(VideoRequestV1) },
  image: { 1: Schema.decodeUnknownEither(ImageRequestV1) }
} as const

export type StoredRequest =
  | { readonly kind: "video"; readonly request: ValidVideoRequest }
  | { readonly kind: "image"; readonly request: ValidImageRequest }

/**
 * The stored request in the current shape, or why it cannot be run: a
 * message for the operator's log (the caller sees the kind's generic failure).
 */
export const decodeStoredRequest = (
  kind: TaskKind,
  version: number,
  stored: unknown
): Either.Either<StoredRequest, string> => {
  const decode =
    (decoders[kind] as Record<number, (u: unknown) => Either.Either<unknown, ParseResult.ParseError>>)[version]
  if (decode === undefined) {
    return Either.left(
      `request version ${version} of a ${kind} task is not known to this release (it reads ${CURRENT_VERSION})`
    )
  }
  return decode(stored).pipe(
    Either.map((request) => ({ kind, request }) as StoredRequest),
    Either.mapLeft((e) => {
      const issues = ParseResult.ArrayFormatter.formatErrorSync(e).map((i) =>
        `${i.path.join(".") || "(root)"}: ${i.message}`
      )
      return `stored ${kind} request (version ${version}) does not decode: ${issues.join("; ")}`
    })
  )
}
