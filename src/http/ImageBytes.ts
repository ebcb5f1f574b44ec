import { Effect } from "effect"
import * as Errors from "../api/Errors.ts"
import { MediaInspector } from "../services/MediaInspector.ts"

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
        : Effect.fail(Errors.badRequest(
          "invalid_request",
          `${where} is not an image: it is ${inspection.mimeType}; send a PNG, JPEG or WebP image.`
        ))
    ),
    Effect.catchTag("InspectError", (e) =>
      e.reason === "unavailable"
        ? Effect.fail(new Errors.ApiError({ status: 503, type: "api_error", code: "inspection_unavailable", message: `${where}: ${e.message}.` }))
        : Effect.fail(Errors.badRequest("invalid_request", `${where} is not a usable PNG, JPEG or WebP image: ${e.message}.`)))
  )
