import { Schema } from "effect"
import { failure } from "../platform/Failure.ts"

/** An unknown asset, another account's, or a deleted one. */
export class AssetNotFound extends Schema.TaggedError<AssetNotFound>()("AssetNotFound", {
  ...failure(404, "asset_not_found"),
  message: Schema.String
}) {}

/** A result file removed past its retention (docs/api.md, Retention): the asset and its task stay readable. */
export class AssetExpired extends Schema.TaggedError<AssetExpired>()("AssetExpired", {
  ...failure(410, "asset_expired"),
  message: Schema.String
}) {}

/** 410 for a result past its retention: its bytes are gone for good, the asset and its task stay. */
export const assetExpired = (id: string, at: number) =>
  new AssetExpired({
    message: `The file of asset ${id} expired at ${
      new Date(at * 1000).toISOString()
    } under its retention; the asset and its task are kept.`
  })
