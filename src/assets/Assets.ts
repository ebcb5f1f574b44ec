import { SqlClient } from "@effect/sql"
import { Context, Data, Effect, Layer, Option } from "effect"
import { nowSeconds } from "../platform/Time.ts"
import { ObjectStorage, type StorageError } from "../storage/ObjectStorage.ts"
import type { TaskKind } from "../tasks/Task.ts"
import { type Asset as AssetObject, isAssetId, type UrlAuth } from "./Asset.ts"

export interface Asset {
  readonly id: string
  readonly accountId: string
  readonly taskId: string
  readonly storageKey: string
  readonly mimeType: string
  readonly filename: string
  readonly sizeBytes: number
  /** When retention removed its bytes (docs/api.md, Retention); null while they are kept. */
  readonly expiredAt: number | null
}

export interface AssetFilter {
  readonly taskId?: string | undefined
  readonly kind?: TaskKind | undefined
  readonly createdAfter?: number | undefined
  readonly createdBefore?: number | undefined
  /** The id of the previous page's last asset; the page continues strictly below it. */
  readonly after?: string | undefined
  readonly limit: number
}

/** `after` names no asset of this account (deleted ones still count, so paging survives deletes). */
export class UnknownCursor extends Data.TaggedError("UnknownCursor")<{ readonly after: string }> {}

interface AssetRow {
  readonly id: string
  readonly account_id: string
  readonly task_id: string
  readonly kind: TaskKind
  readonly storage_key: string
  readonly mime_type: string
  readonly filename: string
  readonly size_bytes: number
  readonly width: number | null
  readonly height: number | null
  readonly duration_ms: number | null
  readonly url: string
  readonly url_auth: UrlAuth
  readonly expires_at: number | null
  readonly expired_at: number | null
  readonly created_at: number
}

const COLUMNS = "id, account_id, task_id, kind, storage_key, mime_type, filename, size_bytes, width, height, " +
  "duration_ms, url, url_auth, expires_at, expired_at, created_at"

const optional = <K extends string>(key: K, value: number | null) =>
  (value === null ? {} : { [key]: value }) as { [P in K]?: number }

/** The asset object of the API. */
const toObject = (r: AssetRow): AssetObject => ({
  id: r.id,
  object: "asset",
  task_id: r.task_id,
  kind: r.kind,
  mime_type: r.mime_type,
  filename: r.filename,
  size_bytes: r.size_bytes,
  ...optional("width", r.width),
  ...optional("height", r.height),
  ...optional("duration_ms", r.duration_ms),
  url: r.url,
  url_auth: r.url_auth,
  // As on the task's result item: only the permanent resource-key URL is not temporary.
  temporary: r.url_auth === "none",
  // A result past its retention: the time its bytes were removed, and the flag (only then, so a kept one is as ever).
  expires_at: r.expired_at ?? r.expires_at,
  ...(r.expired_at === null ? {} : { expired: true as const }),
  created_at: r.created_at
})

const toAsset = (r: AssetRow): Asset => ({
  id: r.id,
  accountId: r.account_id,
  taskId: r.task_id,
  storageKey: r.storage_key,
  mimeType: r.mime_type,
  filename: r.filename,
  sizeBytes: r.size_bytes,
  expiredAt: r.expired_at
})

/**
 * Result files of tasks, each owned by the account of its task. Another
 * account's asset, an unknown id and a deleted asset are all simply absent.
 */
const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const storage = yield* ObjectStorage

  const findRow = (accountId: string, id: string) =>
    // An id that cannot be an asset's is answered without a query (it may hold bytes PostgreSQL refuses).
    !isAssetId(id) ? Effect.succeed(Option.none<AssetRow>()) : sql<AssetRow>`
      SELECT ${sql.literal(COLUMNS)} FROM assets
      WHERE id = ${id} AND account_id = ${accountId} AND deleted_at IS NULL`.pipe(
      Effect.map((rows) => Option.fromNullable(rows[0])),
      Effect.orDie
    )

  /** The stored file of an asset, for serving its bytes. */
  const find = (accountId: string, id: string) =>
    findRow(accountId, id).pipe(
      Effect.map(Option.map(toAsset)),
      Effect.withSpan("Assets.find", { attributes: { "asset.id": id } })
    )

  /** The asset object. */
  const get = (accountId: string, id: string) =>
    findRow(accountId, id).pipe(
      Effect.map(Option.map(toObject)),
      Effect.withSpan("Assets.get", { attributes: { "asset.id": id } })
    )

  /** Newest first, in exact creation order (`seq`); one more row than the page tells whether more follow. */
  const list = (accountId: string, filter: AssetFilter) =>
    Effect.gen(function*() {
      let below: number | undefined
      if (filter.after !== undefined) {
        const [cursor] = isAssetId(filter.after)
          ? yield* sql<{ seq: number }>`SELECT seq FROM assets WHERE id = ${filter.after} AND account_id = ${accountId}`
          : []
        if (cursor === undefined) return yield* new UnknownCursor({ after: filter.after })
        below = cursor.seq
      }
      const conditions = [
        sql`account_id = ${accountId}`,
        sql`deleted_at IS NULL`,
        ...(filter.taskId !== undefined ? [sql`task_id = ${filter.taskId}`] : []),
        ...(filter.kind !== undefined ? [sql`kind = ${filter.kind}`] : []),
        ...(filter.createdAfter !== undefined ? [sql`created_at >= ${filter.createdAfter}`] : []),
        ...(filter.createdBefore !== undefined ? [sql`created_at <= ${filter.createdBefore}`] : []),
        ...(below !== undefined ? [sql`seq < ${below}`] : [])
      ]
      const rows = yield* sql<AssetRow>`
        SELECT ${sql.literal(COLUMNS)} FROM assets WHERE ${sql.and(conditions)}
        ORDER BY seq DESC
        LIMIT ${filter.limit + 1}`
      return { data: rows.slice(0, filter.limit).map(toObject), hasMore: rows.length > filter.limit }
    }).pipe(
      Effect.catchTag("SqlError", Effect.die),
      Effect.withSpan("Assets.list")
    )

  /**
   * Marks the asset deleted and removes its bytes, in one transaction: if
   * storage fails, the row stays as it was and the call can be repeated, so
   * no asset is ever shown whose bytes are gone and no bytes are orphaned by
   * a deleted row. The row lock makes a concurrent second delete wait and
   * then find nothing. False when there is no such asset.
   */
  const remove = (accountId: string, id: string): Effect.Effect<boolean, StorageError> =>
    !isAssetId(id) ? Effect.succeed(false) : Effect.gen(function*() {
      const now = yield* nowSeconds
      const [row] = yield* sql<{ storage_key: string }>`
        UPDATE assets SET deleted_at = ${now}
        WHERE id = ${id} AND account_id = ${accountId} AND deleted_at IS NULL
        RETURNING storage_key`.pipe(Effect.orDie)
      if (row === undefined) return false
      yield* storage.remove(row.storage_key)
      return true
    }).pipe(
      sql.withTransaction,
      Effect.catchTag("SqlError", Effect.die),
      Effect.withSpan("Assets.remove", { attributes: { "asset.id": id } })
    )

  return { find, get, list, remove } as const
})

export class Assets extends Context.Tag("Assets")<Assets, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Assets, make)
}
