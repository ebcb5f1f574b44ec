import { HttpServerRequest } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Effect, Option } from "effect"
import { Assets } from "../assets/Assets.ts"
import { assetExpired, AssetNotFound } from "../assets/Errors.ts"
import { listPage } from "../platform/http/ListEnvelope.ts"
import { readQuery } from "../platform/http/ListQuery.ts"
import { nowSeconds } from "../platform/Time.ts"
import { storageFailureForCaller } from "../storage/CallerFailure.ts"
import { serveObject } from "../storage/ServeObjectHttp.ts"
import { InvalidTaskRequest } from "../tasks/Errors.ts"
import { listConfirmedUploads } from "../uploads/UploadList.ts"
import { AssetParams, CurrentViewer } from "./Api.ts"

const noAsset = () => new AssetNotFound({ message: "No such asset under this account." })

/** Result files, newest first, with the list API's paging. */
export const listAssets = Effect.gen(function*() {
  const { accountId } = yield* CurrentViewer
  const p = yield* readQuery(AssetParams)
  const page = yield* (yield* Assets).list(accountId, {
    kind: p.kind,
    taskId: p.task_id,
    after: p.after,
    limit: p.limit ?? 20
  }).pipe(
    Effect.catchTag(
      "UnknownCursor",
      () => new InvalidTaskRequest({ code: "invalid_request", message: "Unknown page cursor." })
    )
  )
  return listPage(page.data, page.hasMore)
})

/**
 * The bytes of an asset through the session, so the page's video and image
 * elements load them from its own origin (an `ak_` key never reaches the
 * page). Ranges are honoured: a video element seeks with them.
 */
export const assetContent = (id: string) =>
  Effect.gen(function*() {
    const { accountId } = yield* CurrentViewer
    const asset = yield* (yield* Assets).find(accountId, id)
    if (Option.isNone(asset)) return yield* noAsset()
    if (asset.value.expiredAt !== null) return yield* assetExpired(id, asset.value.expiredAt)
    const request = yield* HttpServerRequest.HttpServerRequest
    const download = new URL(request.url, "http://local").searchParams.has("download")
    // The stored filename is ours (task id and index), but quotes are dropped to keep the header well formed.
    const filename = asset.value.filename.replace(/["\\\r\n]/g, "")
    return yield* serveObject(asset.value.storageKey, {
      notFound: noAsset,
      headers: {
        "content-disposition": `${download ? "attachment" : "inline"}; filename="${filename}"`,
        "cache-control": "private, no-store"
      }
    })
  })

export const deleteAsset = (id: string) =>
  Effect.gen(function*() {
    const { accountId } = yield* CurrentViewer
    const removed = yield* (yield* Assets).remove(accountId, id).pipe(
      Effect.catchTag("StorageError", storageFailureForCaller("removing an asset's object failed"))
    )
    if (!removed) return yield* noAsset()
    return { id, object: "asset.deleted", deleted: true } as const
  })

/** Confirmed uploads whose URL still works: reference media the account can use in tasks. */
export const listUploads = Effect.gen(function*() {
  const { accountId } = yield* CurrentViewer
  const sql = yield* SqlClient.SqlClient
  const data = yield* listConfirmedUploads(sql, accountId, yield* nowSeconds, 100)
  return { object: "list", data } as const
})
