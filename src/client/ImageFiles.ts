import { FileSystem } from "@effect/platform"
import { Effect } from "effect"
import { LocalFileError } from "./Errors.ts"
import { describeFile } from "./LocalFiles.ts"
import { withClient } from "./Tasks.ts"

/** A local image as a form file; read whole, since input images are small (20 MB at most). */
const formFile = (path: string) =>
  Effect.gen(function*() {
    const file = yield* describeFile(path)
    if (file.kind !== "image") {
      return yield* Effect.fail(new LocalFileError({ path, message: `an image is needed here, not ${file.mimeType}` }))
    }
    const bytes = yield* Effect.orElseFail(
      Effect.flatMap(FileSystem.FileSystem, (fs) => fs.readFile(path)),
      () => new LocalFileError({ path, message: "the file cannot be read" })
    )
    return new File([bytes as Uint8Array<ArrayBuffer>], file.filename, { type: file.mimeType })
  })

const appendImages = (form: FormData, images: ReadonlyArray<string>, mask: string | undefined) =>
  Effect.gen(function*() {
    for (const image of images) form.append("image", yield* formFile(image))
    if (mask !== undefined) form.append("mask", yield* formFile(mask))
    return form
  })

/**
 * Image pre-upload (`POST /v1/image/uploads`, multipart): local images and an
 * optional mask stored by the gateway; the answer's `images` and `mask` are
 * URLs for `input.images[].url` and `input.mask.url`.
 */
export const uploadImages = (images: ReadonlyArray<string>, mask?: string) =>
  Effect.flatMap(
    appendImages(new FormData(), images, mask),
    (form) => withClient((c) => c.uploads.createImageUploads({ payload: form }), "resource")
  )

export interface ImageEditFields {
  readonly model: string
  readonly prompt: string
  readonly size?: string | undefined
  readonly quality?: string | undefined
  readonly output_format?: string | undefined
}

/** The multipart form of an image edit (`POST /v1/image/tasks`), for `createImageTask`. */
export const imageEditForm = (fields: ImageEditFields, images: ReadonlyArray<string>, mask?: string) => {
  const form = new FormData()
  form.append("model", fields.model)
  form.append("operation", "edit")
  form.append("prompt", fields.prompt)
  for (const name of ["size", "quality", "output_format"] as const) {
    const value = fields[name]
    if (value !== undefined) form.append(name, value)
  }
  return appendImages(form, images, mask)
}
