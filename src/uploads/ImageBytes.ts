import { Effect } from "effect"
import { Registry } from "../catalog/Registry.ts"
import { MediaInspector } from "../media/MediaInspector.ts"
import { InspectionUnavailable, InvalidUpload } from "./Errors.ts"

/** Used when no image model is enabled: the bounds still need a value. */
const FALLBACK = { maxBytes: 20 * 1024 * 1024, maxImages: 4 }

/**
 * What one request may carry as image inputs, from the image plugins'
 * capability tables: per file the largest input any enabled image model
 * takes; per request as many images as the most generous one, plus a mask.
 */
export const imageInputBounds = Effect.map(Registry, (registry) => {
  const caps = registry.imageModels.map((m) => m.capability.input_images)
  return caps.length === 0
    ? FALLBACK
    : { maxBytes: Math.max(...caps.map((c) => c.max_bytes)), maxImages: Math.max(...caps.map((c) => c.max)) }
})

/** The multipart bounds of a form that carries image inputs: the images and one mask. */
export const imageFormLimits = Effect.map(
  imageInputBounds,
  (b) => ({ maxFileBytes: b.maxBytes, maxFiles: b.maxImages + 1 })
)

/**
 * Proves that bytes a caller sent as an image are one: the type sniffed from
 * the content (names and declared types are not trusted), then the picture
 * decoded within the inspector's pixel bound, so a PNG wearing a JPEG header
 * or a decompression bomb is a 400 at the request, before anything is
 * stored or charged. `where` names the file in the message (`image[1]`).
 */
export const checkImageBytes = (where: string, bytes: Uint8Array) =>
  Effect.flatMap(MediaInspector, (inspector) => inspector.inspectBytes(bytes)).pipe(
    Effect.flatMap((inspection) =>
      inspection.kind === "image"
        ? Effect.succeed(inspection)
        : Effect.fail(
          new InvalidUpload({
            message: `${where} is not an image: it is ${inspection.mimeType}; send a PNG, JPEG or WebP image.`
          })
        )
    ),
    Effect.catchTag(
      "InspectError",
      (e): Effect.Effect<never, InspectionUnavailable | InvalidUpload> =>
        e.reason === "unavailable"
          ? Effect.fail(
            new InspectionUnavailable({ code: "inspection_unavailable", message: `${where}: ${e.message}.` })
          )
          : Effect.fail(
            new InvalidUpload({ message: `${where} is not a usable PNG, JPEG or WebP image: ${e.message}.` })
          )
    )
  )
