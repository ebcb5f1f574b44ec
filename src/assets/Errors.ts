import { Schema } from "effect"
import { failure } from "../platform/Failure.ts"

/** An unknown asset, another account's, or a deleted one. */
export class AssetNotFound extends Schema.TaggedError<AssetNotFound>()("AssetNotFound", {
  ...failure(404, "asset_not_found"),
  message: Schema.String
}) {}
