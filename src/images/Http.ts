import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { Chunk, Effect, Encoding, Layer, Option, Stream } from "effect"
import { ModelKeyAuthLive } from "../accounts/Auth.ts"
import { CurrentPrincipal } from "../accounts/Security.ts"
import { GatewayApi } from "../Api.ts"
import { Assets } from "../assets/Assets.ts"
import { AssetNotFound } from "../assets/Errors.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { concatBytes } from "../platform/Digest.ts"
import { InternalError } from "../platform/Failure.ts"
import { asHttpFailure } from "../platform/http/HttpFailure.ts"
import { storageFailureForCaller } from "../storage/CallerFailure.ts"
import type { StorageUnavailable } from "../storage/Errors.ts"
import { ObjectStorage } from "../storage/ObjectStorage.ts"
import { accepted, createContext } from "../tasks/CreateHttp.ts"
import { ImageKind } from "../tasks/ImageKind.ts"
import type { ImageTask } from "../tasks/Task.ts"
import { Tasks } from "../tasks/Tasks.ts"
import { TaskWait } from "../tasks/TaskWait.ts"
import { ImageServiceUnavailable, ImageTaskFailed } from "./Errors.ts"
import type { ImagesResponse, ResponseFormat } from "./OpenAiImages.ts"
import { inOpenAiTerms, type OpenAiImageRequest, readEdit, readGeneration } from "./RequestHttp.ts"

/** The stored bytes of one result image, read back for `b64_json`. */
const resultBytes = (accountId: string, assetId: string) =>
  Effect.gen(function*() {
    const gone = new AssetNotFound({ message: `The result image ${assetId} was deleted.` })
    const asset = yield* Effect.flatMap(Assets, (assets) => assets.find(accountId, assetId))
    if (Option.isNone(asset)) return yield* gone
    const content = yield* Effect.flatMap(ObjectStorage, (storage) => storage.read(asset.value.storageKey))
    if (Option.isNone(content)) return yield* gone
    const chunks = yield* Stream.runCollect(content.value.body)
    return concatBytes(Chunk.toReadonlyArray(chunks))
  }).pipe(
    Effect.catchTag("StorageError", storageFailureForCaller("reading a result image failed"))
  )

/**
 * The answer for the task as the wait left it: 200 with its images, the
 * spec's error body for a failure (503 + Retry-After for `524`, 502
 * otherwise), or 202 with the task while it is still running.
 */
const answer = (accountId: string, task: ImageTask, replayed: boolean, format: ResponseFormat) =>
  Effect.gen(function*() {
    const { limits } = yield* AppConfig
    const replay: Record<string, string> = replayed ? { "idempotent-replayed": "true" } : {}
    if (task.status === "succeeded") {
      const data = yield* Effect.forEach(
        task.result?.images ?? [],
        (
          item
        ): Effect.Effect<
          ImagesResponse["data"][number],
          AssetNotFound | InternalError | StorageUnavailable,
          Assets | ObjectStorage
        > =>
          format === "url"
            ? Effect.succeed({ url: item.url })
            : Effect.map(resultBytes(accountId, item.asset_id), (bytes) => ({ b64_json: Encoding.encodeBase64(bytes) }))
      )
      const body: ImagesResponse = { created: task.completed_at ?? task.created_at, data, usage: task.usage }
      return HttpServerResponse.unsafeJson(body, { headers: replay })
    }
    if (task.status === "failed") {
      const code = task.error?.code ?? ImageKind.codes.failed
      const message = task.error?.message ?? "The image could not be generated."
      const failed = code === ImageKind.codes.unavailable
        ? new ImageServiceUnavailable({ message, retryAfter: limits.poll_interval_s })
        : new ImageTaskFailed({ code, message })
      // Idempotent-Replayed is this endpoint's own header, so the answer is made here.
      return yield* asHttpFailure(failed, { headers: replay })
    }
    return accepted("image", { task, replayed }, limits.poll_interval_s)
  })

/** Creates the task on the path of `POST /v1/image/tasks`, then waits for it up to `limits.sync_wait_s`. */
const createAndWait = <E, R>(read: Effect.Effect<OpenAiImageRequest, E, R>) =>
  Effect.gen(function*() {
    const context = yield* createContext
    const tasks = yield* Tasks
    const { limits } = yield* AppConfig
    const { submission, responseFormat } = yield* read
    // Refusals of the request itself speak the OpenAI parameters' names.
    const valid = yield* tasks.validateImage(submission).pipe(
      Effect.mapError((e) => asHttpFailure(e, { message: inOpenAiTerms(e.message) }))
    )
    const { task, replayed } = yield* tasks.createValidImage(context, submission, valid)
    const settled = yield* (yield* TaskWait).awaitSettled(
      context.principal.accountId,
      "image",
      task,
      limits.sync_wait_s
    )
    return yield* answer(context.principal.accountId, settled, replayed, responseFormat)
  })

export const ImagesLive = HttpApiBuilder.group(GatewayApi, "images", (handlers) =>
  handlers
    .handle("createImageGeneration", () => createAndWait(readGeneration))
    .handle("createImageEdit", () =>
      Effect.flatMap(CurrentPrincipal, (principal) => createAndWait(readEdit(principal.accountId))))).pipe(
    Layer.provide(ModelKeyAuthLive)
  )
