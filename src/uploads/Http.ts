import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { ResourceKeyAuthLive } from "../accounts/Auth.ts"
import { CurrentPrincipal } from "../accounts/Security.ts"
import { GatewayApi } from "../Api.ts"
import { readJson } from "../platform/http/Body.ts"
import { imageUploadsFromBase64, imageUploadsFromForm } from "./ImageUploadsHttp.ts"
import { CompleteUploadsRequest, MediaUploadRequest } from "./Upload.ts"
import { Uploads } from "./Uploads.ts"

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
