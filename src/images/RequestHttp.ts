import { Effect, Schema } from "effect"
import { formatParseError, readJson } from "../platform/http/Body.ts"
import { readForm } from "../platform/http/Multipart.ts"
import { InvalidTaskRequest } from "../tasks/Errors.ts"
import { formSubmission, type ImageSubmission } from "../tasks/ImageTasks.ts"
import { imageFormLimits } from "../uploads/ImageBytes.ts"
import { IMAGE_EDIT_FILES, ImagesEditFields, ImagesGenerationRequest, type ResponseFormat } from "./OpenAiImages.ts"

/**
 * Reads the OpenAI-shaped requests of `/v1/images/generations` and
 * `/v1/images/edits` into the image task's own shape, so they go through the
 * same validation, idempotency and charge as `POST /v1/image/tasks`:
 * `prompt` → `input.prompt`, `n` → `output.count`, `size` → `output.size`,
 * `quality` → `output.quality`, `output_format` → `output.format`, the
 * `image` files → the source images, `mask` → the mask.
 */

export interface OpenAiImageRequest {
  readonly submission: ImageSubmission
  readonly responseFormat: ResponseFormat
}

interface Params {
  readonly model: string
  readonly prompt: string
  readonly n?: number | null | undefined
  readonly size?: string | null | undefined
  readonly quality?: string | null | undefined
  readonly output_format?: string | null | undefined
}

/** The image task body the parameters stand for; a parameter not given (or null) is left to the model's default. */
const taskBody = (operation: "generation" | "edit", params: Params) => {
  const output = Object.fromEntries(
    Object.entries({ count: params.n, size: params.size, quality: params.quality, format: params.output_format })
      .filter(([, value]) => value !== undefined && value !== null)
  )
  return {
    model: params.model,
    operation,
    input: { prompt: params.prompt },
    ...(Object.keys(output).length > 0 ? { output } : {})
  }
}

/**
 * The task body is what the Idempotency-Key's digest covers: `response_format`
 * only shapes the answer, so a replay may ask for the same task's images the
 * other way.
 */
export const readGeneration = Effect.map(readJson(ImagesGenerationRequest), (request): OpenAiImageRequest => {
  const body = taskBody("generation", request)
  return { submission: { body, content: body, store: Effect.void }, responseFormat: request.response_format ?? "url" }
})

/** The multipart edit: text fields decoded strictly, `image` and `image[]` files in the order sent, at most one `mask`. */
export const readEdit = (accountId: string) =>
  Effect.gen(function*() {
    const form = yield* readForm(yield* imageFormLimits)
    for (const file of form.files) {
      if (!Object.hasOwn(IMAGE_EDIT_FILES, file.field)) {
        return yield* new InvalidTaskRequest({
          code: "invalid_request",
          message: `Unknown file field "${file.field}".`
        })
      }
    }
    const fields = yield* Schema.decodeUnknown(ImagesEditFields, { onExcessProperty: "error", errors: "all" })(
      Object.fromEntries(form.fields)
    ).pipe(
      Effect.mapError((e) =>
        new InvalidTaskRequest({ code: "invalid_request", message: `Invalid form fields: ${formatParseError(e)}` })
      )
    )
    const masks = form.files.filter((f) => f.field === "mask")
    if (masks.length > 1) {
      return yield* new InvalidTaskRequest({ code: "invalid_request", message: `At most one "mask" file is accepted.` })
    }
    // One numbering for both spellings, so messages name `image[i]` as the caller counts them.
    const images = form.files.filter((f) => f.field !== "mask").map((f, index) => ({ ...f, field: "image", index }))
    const submission = yield* formSubmission(accountId, taskBody("edit", fields), images, masks[0] ?? null)
    return { submission, responseFormat: fields.response_format ?? "url" } satisfies OpenAiImageRequest
  })

/** Task field names in the validator's messages, and the OpenAI parameter each came from. */
const PARAMETER_NAMES: ReadonlyArray<readonly [string, string]> = [
  [`"input.prompt"`, `"prompt"`],
  [`"input.images"`, `"image"`],
  [`"input.mask"`, `"mask"`],
  [`"output.count"`, `"n"`],
  [`"output.size"`, `"size"`],
  [`"output.quality"`, `"quality"`],
  [`"output.format"`, `"output_format"`]
]

/** A validation message worded with the parameters the caller sent, not the task fields they map to. */
export const inOpenAiTerms = (message: string): string =>
  PARAMETER_NAMES.reduce((text, [field, parameter]) => text.replaceAll(field, parameter), message)
