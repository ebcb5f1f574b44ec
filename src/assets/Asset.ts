import { Schema } from "effect"
import { TaskKind } from "../tasks/Task.ts"

export const UrlAuth = Schema.Literal("none", "resource_api_key")
export type UrlAuth = typeof UrlAuth.Type

/**
 * A result file of a task (docs/api.md, Assets). `url`, `url_auth` and
 * `temporary` are those of the task's result item; `expires_at` is when a
 * `none` URL stops working (null for the permanent `resource_api_key` URL).
 */
export const Asset = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("asset"),
  task_id: Schema.String,
  kind: TaskKind,
  mime_type: Schema.String,
  filename: Schema.String,
  size_bytes: Schema.Int,
  width: Schema.optional(Schema.Int),
  height: Schema.optional(Schema.Int),
  duration_ms: Schema.optional(Schema.Int),
  url: Schema.String,
  url_auth: UrlAuth,
  temporary: Schema.Boolean,
  expires_at: Schema.NullOr(Schema.Int),
  /** Present (true) once the file is past its retention and removed; `expires_at` is then when. */
  expired: Schema.optional(Schema.Literal(true)),
  created_at: Schema.Int
})
export type Asset = typeof Asset.Type

export const AssetDeleted = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("asset.deleted"),
  deleted: Schema.Literal(true)
})

/** Asset ids are `asset_` and 22 base62 characters; anything else names no asset and never reaches the database. */
const ASSET_ID = /^asset_[0-9A-Za-z]{22}$/
export const isAssetId = (id: string): boolean => ASSET_ID.test(id)
