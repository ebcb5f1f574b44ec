import { Effect } from "effect"
import { GenerationError } from "../../channel/contract/Adapter.ts"
import { MediaInspector } from "../../media/MediaInspector.ts"
import type { TaskKind } from "../Task.ts"
import type { TaskFailure } from "../TaskFailure.ts"
import type { Output } from "./Plans.ts"

const EXTENSIONS: Record<string, string> = {
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/webp": "webp",
  "video/mp4": "mp4",
  "video/quicktime": "mov"
}
const FORMATS: Record<string, string> = { "image/png": "png", "image/jpeg": "jpeg", "image/webp": "webp" }

/**
 * Every result is inspected before it is stored, whatever channel made it:
 * an upstream's bytes are not trusted (a truncated download, base64 cut
 * short, an error page served with 200, a picture of another size than
 * asked). What the task reports (type, extension, format, dimensions) is
 * what the bytes are. A result that is not media of the task's kind is a
 * transient failure, so the engine's retries ask again before the task
 * fails with its refund.
 */
export const checkOutputs = (kind: TaskKind, outputs: ReadonlyArray<Output>, failure: TaskFailure) =>
  Effect.flatMap(
    MediaInspector,
    (inspector) =>
      Effect.forEach(outputs, (output, index) =>
        (output._tag === "Downloaded"
          ? inspector.inspectFile(output.path, output.head, output.sizeBytes)
          : inspector.inspectBytes(output.bytes)).pipe(
            Effect.filterOrFail(
              (inspection) => inspection.kind === kind,
              (inspection) => `a ${inspection.mimeType} file`
            ),
            Effect.map((inspection): Output => ({
              ...output,
              mimeType: inspection.mimeType,
              extension: EXTENSIONS[inspection.mimeType] ?? output.extension,
              format: kind === "image" ? FORMATS[inspection.mimeType] ?? output.format : output.format,
              width: inspection.width ?? output.width,
              height: inspection.height ?? output.height,
              durationMs: inspection.durationMs ?? output.durationMs
            })),
            Effect.tapError((why) =>
              Effect.logWarning("a result is not usable media").pipe(
                Effect.annotateLogs({ output_index: index, reason: typeof why === "string" ? why : why.message })
              )
            ),
            Effect.mapError(() => new GenerationError({ ...failure, transient: true }))
          ))
  )
