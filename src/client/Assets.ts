import { Effect } from "effect"
import type { ApiClient } from "./Client.ts"
import { type DownloadOptions, downloadResult } from "./Download.ts"
import { withClient } from "./Tasks.ts"

export type AssetListParams = Parameters<ApiClient["assets"]["listAssets"]>[0]["urlParams"]

/** One page of the caller's assets, newest first (docs/api.md, Assets). */
export const listAssets = (params: AssetListParams = {}) =>
  withClient((c) => c.assets.listAssets({ urlParams: params }), "resource")

export const getAsset = (id: string) => withClient((c) => c.assets.getAsset({ path: { asset_id: id } }), "resource")

/** Removes the asset's bytes from storage; the task keeps its result item, whose URL stops working. */
export const deleteAsset = (id: string) =>
  withClient((c) => c.assets.deleteAsset({ path: { asset_id: id } }), "resource")

/**
 * Downloads an asset into `dir` through `GET /v1/assets/{id}/content` with the
 * resource key, which serves both `url_auth` kinds, also after a signed URL
 * has expired.
 */
export const downloadAsset = (id: string, dir: string, options: DownloadOptions = {}) =>
  Effect.flatMap(getAsset(id), (asset) =>
    downloadResult(
      {
        asset_id: asset.id,
        url: `/v1/assets/${encodeURIComponent(asset.id)}/content`,
        mime_type: asset.mime_type,
        filename: asset.filename,
        url_auth: "resource_api_key"
      },
      dir,
      options
    ))
