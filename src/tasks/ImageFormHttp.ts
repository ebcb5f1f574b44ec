import { HttpServerRequest } from "@effect/platform"
import { Effect, Schema } from "effect"
import { readJson } from "../platform/http/Body.ts"
import { readForm } from "../platform/http/Multipart.ts"
import { imageFormLimits } from "../uploads/ImageBytes.ts"
import { InvalidTaskRequest } from "./Errors.ts"
import { formSubmission, type ImageSubmission } from "./ImageTasks.ts"

/**
 * The HTTP side of `POST /v1/image/tasks`: the request read in either form,
 * JSON or multipart (`edit` with the image files in the request), as the
 * submission the tasks service takes.
 */

/** The form fields of the multipart edit, mapped to the JSON form they stand for. */
const FORM_FIELDS = new Set(["model", "operation", "prompt", "size", "quality", "output_format"])
const FORM_FILES = new Set(["image", "mask"])

/** The multipart form of `POST /v1/image/tasks` (edit only), fields turned into the JSON shape the validator reads. */
const fromForm = (accountId: string) =>
  Effect.gen(function*() {
    // Bounds before the model is known; the model's own limits are checked after.
    const form = yield* readForm(yield* imageFormLimits)
    for (const name of form.fields.keys()) {
      if (!FORM_FIELDS.has(name)) {
        return yield* new InvalidTaskRequest({ code: "invalid_request", message: `Unknown form field "${name}".` })
      }
    }
    for (const file of form.files) {
      if (!FORM_FILES.has(file.field)) {
        return yield* new InvalidTaskRequest({
          code: "invalid_request",
          message: `Unknown file field "${file.field}".`
        })
      }
    }
    if (form.fields.get("operation") !== "edit") {
      return yield* new InvalidTaskRequest({
        code: "invalid_request",
        message: `The multipart form is only for "operation" = "edit".`
      })
    }
    const masks = form.files.filter((f) => f.field === "mask")
    if (masks.length > 1) {
      return yield* new InvalidTaskRequest({ code: "invalid_request", message: `At most one "mask" file is accepted.` })
    }
    const output = Object.fromEntries(
      [["size", "size"], ["quality", "quality"], ["output_format", "format"]]
        .flatMap(([field, key]) => (form.fields.has(field!) ? [[key, form.fields.get(field!)]] : []))
    )
    const body = {
      ...(form.fields.has("model") ? { model: form.fields.get("model") } : {}),
      operation: "edit",
      input: { ...(form.fields.has("prompt") ? { prompt: form.fields.get("prompt") } : {}) },
      ...(Object.keys(output).length ? { output } : {})
    }
    return yield* formSubmission(accountId, body, form.files.filter((f) => f.field === "image"), masks[0] ?? null)
  })

/** The image task request of the current HTTP request, in whichever form it came. */
export const imageSubmission = (accountId: string) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const multipart = /^multipart\//i.test(request.headers["content-type"] ?? "")
    const submission: ImageSubmission = multipart
      ? yield* fromForm(accountId)
      : yield* Effect.map(readJson(Schema.Unknown), (body) => ({ body, content: body, store: Effect.void }))
    return submission
  })
