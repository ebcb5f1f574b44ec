import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { ModelKeyAuth } from "../accounts/Security.ts"
import { AssetNotFound } from "../assets/Errors.ts"
import { BodyErrors, errors } from "../platform/http/ErrorContract.ts"
import { jsonBody, multipartBody } from "../platform/http/OpenApiBody.ts"
import { StorageUnavailable } from "../storage/Errors.ts"
import { CreateErrors, ImageInputErrors } from "../tasks/Api.ts"
import { ImageTask } from "../tasks/Task.ts"
import { ImageServiceUnavailable, ImageTaskFailed } from "./Errors.ts"
import { IMAGE_EDIT_FILES, ImagesEditFields, ImagesGenerationRequest, ImagesResponse } from "./OpenAiImages.ts"

/** Besides creating the task: its failure (502, or 503 for `524`), and a result image deleted before it was read back. */
const WaitErrors = errors(ImageTaskFailed, ImageServiceUnavailable, AssetNotFound, StorageUnavailable)

const WAIT =
  "Creates, charges and runs an image task exactly like `POST /v1/image/tasks` (same validation, Idempotency-Key, refund, webhook event) and waits for it. " +
  "200: the images. A failed task: 503 with `Retry-After` for code `524`, 502 for other codes, with the task's error code. " +
  "Past `limits.sync_wait_s`: 202 with the image task and `Location`; the task keeps running."

/**
 * The synchronous image endpoints in the OpenAI Images API shape, for
 * `sk-` model tokens. Bodies are read and checked by the handlers, so every
 * failure has the spec's error body.
 */
export class ImagesApi extends HttpApiGroup.make("images")
  .add(
    HttpApiEndpoint.post("createImageGeneration", "/v1/images/generations")
      .addSuccess(ImagesResponse)
      .addSuccess(ImageTask, { status: 202 })
      .addError(BodyErrors).addError(CreateErrors).addError(ImageInputErrors).addError(WaitErrors)
      .annotate(OpenApi.Override, jsonBody(ImagesGenerationRequest))
      .annotate(OpenApi.Description, WAIT)
  )
  .add(
    HttpApiEndpoint.post("createImageEdit", "/v1/images/edits")
      .addSuccess(ImagesResponse)
      .addSuccess(ImageTask, { status: 202 })
      .addError(BodyErrors).addError(CreateErrors).addError(ImageInputErrors).addError(WaitErrors)
      .annotate(OpenApi.Override, multipartBody(ImagesEditFields, IMAGE_EDIT_FILES))
      .annotate(OpenApi.Description, WAIT)
  )
  .middleware(ModelKeyAuth)
  .annotate(OpenApi.Title, "Images (synchronous, OpenAI shape)")
{}
