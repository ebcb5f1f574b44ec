import { HttpApiEndpoint, HttpApiGroup, HttpApiSchema, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { ResourceKeyAuth } from "./Security.ts"

/**
 * Result files whose `url_auth` is `resource_api_key`: the bytes, to the
 * owning account's `ak_` key only (another account's key gets 404, as for
 * tasks). Range requests are honoured.
 */
export class AssetsApi extends HttpApiGroup.make("assets")
  .add(
    HttpApiEndpoint.get("getAssetContent", "/v1/assets/:asset_id/content")
      .setPath(Schema.Struct({ asset_id: Schema.String }))
      .addSuccess(HttpApiSchema.Uint8Array())
  )
  .middleware(ResourceKeyAuth)
  .annotate(OpenApi.Title, "Assets")
{}
