import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { ResourceKeyAuth } from "../accounts/Security.ts"
import { BodyErrors, errors } from "../platform/http/ErrorContract.ts"
import { jsonBody } from "../platform/http/OpenApiBody.ts"
import { StorageUnavailable } from "../storage/Errors.ts"
import {
  InspectionUnavailable,
  InvalidUpload,
  InvalidUploadContent,
  UploadNotFound,
  UploadNotReceived,
  UploadTooLarge
} from "./Errors.ts"
import {
  CompleteUploadsRequest,
  ImageUploadBase64Request,
  ImageUploadList,
  MediaUploadList,
  MediaUploadRequest,
  MediaUploadSessionList
} from "./Upload.ts"

/** What pre-uploading images answers with: a file that is not a usable image, one too large, an inspector down. */
const ImageUploadErrors = errors(InvalidUpload, UploadTooLarge, InspectionUnavailable, StorageUnavailable)

/**
 * Uploads with `ak_` resource keys: the three-step direct upload of reference
 * media (sessions, PUT to storage, confirmation) and the image pre-upload.
 * Bodies are read and checked by the handlers, so every failure has the
 * spec's error body.
 */
export class UploadsApi extends HttpApiGroup.make("uploads")
  .add(
    HttpApiEndpoint.post("createMediaUploads", "/v1/media/uploads").addSuccess(MediaUploadSessionList)
      .addError(BodyErrors).addError(errors(InvalidUpload, StorageUnavailable))
      .annotate(OpenApi.Override, jsonBody(MediaUploadRequest))
      .annotate(OpenApi.Description, "Pre-signed PUT URLs for 1 to 12 files; the bytes go straight to object storage.")
  )
  .add(
    HttpApiEndpoint.post("completeMediaUploads", "/v1/media/uploads/complete").addSuccess(MediaUploadList)
      .addError(BodyErrors)
      .addError(
        errors(UploadNotFound, UploadNotReceived, InvalidUploadContent, InspectionUnavailable, StorageUnavailable)
      )
      .annotate(OpenApi.Override, jsonBody(CompleteUploadsRequest))
      .annotate(
        OpenApi.Description,
        "Confirms uploads by inspecting the stored bytes, all or nothing: 200 with every upload confirmed in `data` (request order), or the error of the first id refused (404 `upload_not_found`, 409 `upload_not_received`, 400 `invalid_upload_content`, `upload_size_mismatch` or a media-duration code), and none confirmed."
      )
  )
  .add(
    HttpApiEndpoint.post("createImageUploads", "/v1/image/uploads").addSuccess(ImageUploadList)
      .addError(BodyErrors).addError(ImageUploadErrors)
      .annotate(OpenApi.Description, "multipart/form-data: repeatable `image` files and an optional `mask` file.")
  )
  .add(
    HttpApiEndpoint.post("createImageUploadsBase64", "/v1/image/uploads/base64").addSuccess(ImageUploadList)
      .addError(BodyErrors).addError(ImageUploadErrors)
      .annotate(OpenApi.Override, jsonBody(ImageUploadBase64Request))
  )
  .middleware(ResourceKeyAuth)
  .annotate(OpenApi.Title, "Uploads")
{}
