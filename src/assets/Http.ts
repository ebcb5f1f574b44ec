import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer, Option } from "effect"
import { ResourceKeyAuthLive } from "../accounts/Auth.ts"
import { CurrentPrincipal } from "../accounts/Security.ts"
import { GatewayApi } from "../Api.ts"
import { listPage } from "../platform/http/ListEnvelope.ts"
import { readQuery } from "../platform/http/ListQuery.ts"
import { storageFailureForCaller } from "../storage/CallerFailure.ts"
import { serveObject } from "../storage/ServeObjectHttp.ts"
import { InvalidTaskRequest } from "../tasks/Errors.ts"
import { AssetListParams, DEFAULT_PAGE_LIMIT } from "../tasks/Requests.ts"
import { Assets } from "./Assets.ts"
import { assetExpired, AssetNotFound } from "./Errors.ts"

/** The message names the id, cut short: a path may carry an id of any length. */
const assetNotFound = (id: string) => () =>
  new AssetNotFound({
    message: `No asset ${JSON.stringify(id.length > 64 ? `${id.slice(0, 64)}…` : id)} under this account.`
  })

const accountId = Effect.map(CurrentPrincipal, (p) => p.accountId)

const listAssets = Effect.gen(function*() {
  const p = yield* readQuery(AssetListParams)
  const page = yield* (yield* Assets).list(yield* accountId, {
    taskId: p.task_id,
    kind: p.kind,
    createdAfter: p.created_after,
    createdBefore: p.created_before,
    after: p.after,
    limit: p.limit ?? DEFAULT_PAGE_LIMIT
  }).pipe(
    Effect.catchTag(
      "UnknownCursor",
      ({ after }) =>
        new InvalidTaskRequest({
          code: "invalid_request",
          message: `Invalid query: after: "${after}" names no asset of this account.`
        })
    )
  )
  return listPage(page.data, page.hasMore)
})

const getAsset = (id: string) =>
  Effect.gen(function*() {
    const asset = yield* (yield* Assets).get(yield* accountId, id)
    return Option.isSome(asset) ? asset.value : yield* assetNotFound(id)()
  })

const deleteAsset = (id: string) =>
  Effect.gen(function*() {
    const removed = yield* (yield* Assets).remove(yield* accountId, id).pipe(
      Effect.catchTag("StorageError", storageFailureForCaller("removing an asset's object failed"))
    )
    if (!removed) {
      return yield* assetNotFound(id)()
    }
    return { id, object: "asset.deleted" as const, deleted: true as const }
  })

const getAssetContent = (id: string) =>
  Effect.gen(function*() {
    const asset = yield* (yield* Assets).find(yield* accountId, id)
    if (Option.isNone(asset)) return yield* assetNotFound(id)()
    if (asset.value.expiredAt !== null) return yield* assetExpired(id, asset.value.expiredAt)
    return yield* serveObject(asset.value.storageKey, {
      notFound: assetNotFound(id),
      headers: { "content-disposition": `attachment; filename="${asset.value.filename}"` }
    })
  })

export const AssetsLive = HttpApiBuilder.group(GatewayApi, "assets", (handlers) =>
  handlers
    .handle("listAssets", () => listAssets)
    .handle("getAsset", ({ path }) => getAsset(path.asset_id))
    .handle("deleteAsset", ({ path }) => deleteAsset(path.asset_id))
    .handle("getAssetContent", ({ path }) => getAssetContent(path.asset_id))).pipe(Layer.provide(ResourceKeyAuthLive))
