import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { GatewayApi } from "../api/Api.ts"
import { CurrentPrincipal } from "../api/Security.ts"
import { CompleteUploadsRequest, MediaUploadRequest } from "../domain/Upload.ts"
import { Uploads } from "../services/Uploads.ts"
import { ResourceKeyAuthLive } from "./Auth.ts"
import { readJson } from "./Body.ts"
import { imageUploadsFromBase64, imageUploadsFromForm } from "./ImageUploads.ts"

/** Step 1: sessions with pre-signed PUT URLs, in request order. */
const createMediaUploads = Effect.gen(function*() {
  const principal = yield* CurrentPrincipal
  const uploads = yield* Uploads
  const { files } = yield* readJson(MediaUploadRequest)
  const data = yield* uploads.createSessions(principal.accountId, files)
  return { object: "media.upload.session.list" as const, data }
})

/** Step 3: the caller's own uploads confirmed by inspection, all of them or none (the first refusal answers). */
const completeMediaUploads = Effect.gen(function*() {
  const principal = yield* CurrentPrincipal
  const uploads = yield* Uploads
  const { upload_ids } = yield* readJson(CompleteUploadsRequest)
  const data = yield* uploads.complete(principal.accountId, upload_ids)
  return { object: "media.upload.list" as const, data }
})

export const UploadsLive = HttpApiBuilder.group(GatewayApi, "uploads", (handlers) =>
  handlers
    .handle("createMediaUploads", () => createMediaUploads)
    .handle("completeMediaUploads", () => completeMediaUploads)
    .handle("createImageUploads", () => imageUploadsFromForm)
    .handle("createImageUploadsBase64", () => imageUploadsFromBase64)).pipe(
    Layer.provide(ResourceKeyAuthLive)
  )
