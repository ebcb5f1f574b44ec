import { HttpRouter, HttpServerRequest } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Effect, Option, Schema } from "effect"
import { listPage } from "../platform/http/ListEnvelope.ts"
import { PageLimit, readQuery } from "../platform/http/ListQuery.ts"
import { nowSeconds } from "../platform/Time.ts"
import { serveObject } from "../storage/ServeObjectHttp.ts"
import { Assets } from "../tasks/Assets.ts"
import { TaskKind } from "../tasks/Task.ts"
import { listConfirmedUploads } from "../uploads/UploadList.ts"
import { accountOf, writableSession } from "./ConsoleAuth.ts"
import { ConsoleError, consoleError, json } from "./Respond.ts"
import { viewer } from "./TaskRoutes.ts"

const AssetParams = Schema.Struct({
  kind: Schema.optional(TaskKind),
  task_id: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))),
  after: Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))),
  limit: Schema.optional(PageLimit)
})

const noAsset = consoleError(404, "asset_not_found", "No such asset under this account.")

/** Result files, newest first, with the list API's paging. */
export const listAssets = Effect.gen(function*() {
  const { accountId } = yield* viewer
  const p = yield* readQuery(AssetParams)
  const page = yield* (yield* Assets).list(accountId, {
    kind: p.kind,
    taskId: p.task_id,
    after: p.after,
    limit: p.limit ?? 20
  }).pipe(Effect.catchTag("UnknownCursor", () => consoleError(400, "invalid_request", "Unknown page cursor.")))
  return json(listPage(page.data, page.hasMore))
})

/**
 * The bytes of an asset through the session, so the page's video and image
 * elements load them from its own origin (an `ak_` key never reaches the
 * page). Ranges are honoured: a video element seeks with them.
 */
export const assetContent = Effect.gen(function*() {
  const { accountId } = yield* viewer
  const { id } = yield* HttpRouter.params
  const asset = yield* (yield* Assets).find(accountId, id ?? "")
  if (Option.isNone(asset)) return yield* noAsset
  const request = yield* HttpServerRequest.HttpServerRequest
  const download = new URL(request.url, "http://local").searchParams.has("download")
  // The stored filename is ours (task id and index), but quotes are dropped to keep the header well formed.
  const filename = asset.value.filename.replace(/["\\\r\n]/g, "")
  return yield* serveObject(asset.value.storageKey, {
    notFound: () =>
      new ConsoleError({ status: 404, code: "asset_not_found", message: "No such asset under this account." }),
    headers: {
      "content-disposition": `${download ? "attachment" : "inline"}; filename="${filename}"`,
      "cache-control": "private, no-store"
    }
  })
})

export const deleteAsset = Effect.gen(function*() {
  const accountId = yield* Effect.flatMap(writableSession, accountOf)
  const { id } = yield* HttpRouter.params
  const removed = yield* (yield* Assets).remove(accountId, id ?? "")
  if (!removed) return yield* noAsset
  return json({ id, object: "asset.deleted", deleted: true })
})

/** Confirmed uploads whose URL still works: reference media the account can use in tasks. */
export const listUploads = Effect.gen(function*() {
  const { accountId } = yield* viewer
  const sql = yield* SqlClient.SqlClient
  const data = yield* listConfirmedUploads(sql, accountId, yield* nowSeconds, 100)
  return json({ object: "list", data })
})
