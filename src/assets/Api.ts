import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ResourceKeyAuth } from "../accounts/Security.ts"
import { errors, httpFailures, ResourceId } from "../platform/http/ErrorContract.ts"
import { ListEnvelope } from "../platform/http/ListEnvelope.ts"
import { StorageUnavailable } from "../storage/Errors.ts"
import { ListErrors } from "../tasks/Api.ts"
import { Asset, AssetDeleted } from "./Asset.ts"
import { AssetExpired, AssetNotFound } from "./Errors.ts"

const assetPath = Schema.Struct({ asset_id: ResourceId(() => new AssetNotFound({ message: "No such asset." })) })

const NotFound = errors(AssetNotFound)
const Expired = errors(AssetExpired)
/** Reading or removing the bytes while object storage is away: 503 with `Retry-After`. */
const StorageErrors = errors(StorageUnavailable)

const query = (name: string, description: string, schema: Record<string, unknown>) => ({
  name,
  in: "query",
  required: false,
  description,
  schema
})

/**
 * The list's query parameters are read and checked by the handler (so a bad
 * one gets the spec's error body naming it), so HttpApi does not know them;
 * they are documented here instead.
 */
const listParameters = {
  parameters: [
    query("task_id", "Only the assets of this task.", { type: "string" }),
    query("kind", "Only videos or only images.", { type: "string", enum: ["video", "image"] }),
    query("created_after", "Created at or after this time (Unix seconds).", { type: "integer", minimum: 0 }),
    query("created_before", "Created at or before this time (Unix seconds).", { type: "integer", minimum: 0 }),
    query("after", "The `last_id` of the previous page; the page continues strictly below it.", { type: "string" }),
    query("limit", "Page size.", { type: "integer", minimum: 1, maximum: 100, default: 20 })
  ]
}

/**
 * Result files of tasks, to the owning account's `ak_` key only (another
 * account's asset is 404 `asset_not_found`, as for tasks). The content of
 * either `url_auth` kind is served to the owner; ranges are honoured.
 */
export class AssetsApi extends HttpApiGroup.make("assets")
  .add(
    HttpApiEndpoint.get("listAssets", "/v1/assets").addSuccess(ListEnvelope(Asset)).addError(ListErrors)
      .annotate(OpenApi.Override, listParameters)
      .annotate(OpenApi.Description, "Newest first, in exact creation order; deleted assets are left out.")
  )
  .add(HttpApiEndpoint.get("getAsset", "/v1/assets/:asset_id").setPath(assetPath).addSuccess(Asset).addError(NotFound))
  .add(
    HttpApiEndpoint.del("deleteAsset", "/v1/assets/:asset_id").setPath(assetPath).addSuccess(AssetDeleted)
      .addError(NotFound).addError(StorageErrors)
      .annotate(
        OpenApi.Description,
        "Removes the bytes from object storage. The task keeps its result as it was; the URL there stops working."
      )
  )
  .add(
    HttpApiEndpoint.get("getAssetContent", "/v1/assets/:asset_id/content").setPath(assetPath)
      .addSuccess(HttpApiSchema.Uint8Array())
      // 416 for a range outside the object, with its Content-Range.
      .addError(NotFound).addError(Expired).addError(httpFailures(416)).addError(StorageErrors)
  )
  .middleware(ResourceKeyAuth)
  .annotate(OpenApi.Title, "Assets")
{}
