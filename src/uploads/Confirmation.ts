import { SqlClient } from "@effect/sql"
import { Effect, Either } from "effect"
import type { Inspection } from "../media/MediaInspector.ts"
import { inspectable } from "../media/MediaTypes.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { randomBase62 } from "../platform/Ids.ts"
import { nowSeconds } from "../platform/Time.ts"
import { storageFailureForCaller } from "../storage/CallerFailure.ts"
import { ObjectStorage, type PresignedGet } from "../storage/ObjectStorage.ts"
import { UploadNotReceived } from "./Errors.ts"
import type { ConfirmedUpload } from "./Upload.ts"
import { makeUploadInspection } from "./UploadInspection.ts"
import { uploadNotFound, type UploadRow, urlDigest } from "./UploadRow.ts"

/** A confirmed URL this close to its expiry is replaced by a fresh one when confirmed again. */
const RENEW_BEFORE_S = 300

const confirmedItem = (row: UploadRow): ConfirmedUpload => ({
  id: row.id,
  client_id: row.client_id,
  kind: row.kind,
  url: row.url!,
  mime_type: row.mime_type!,
  size_bytes: row.size_bytes!,
  temporary: true,
  expires_at: row.url_expires_at!
})

/**
 * Confirmation of media uploads (`POST /v1/media/uploads/complete`, the
 * `complete` of `Uploads`): all or nothing, in request order (docs/uploads.md,
 * The three steps). Each id's object is copied to a key of its own and that
 * copy inspected; only when every id is good are they written, in one
 * transaction.
 */
export const makeConfirmation = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const storage = yield* ObjectStorage
  const inspect = yield* makeUploadInspection
  const settings = (yield* AppConfig).limits.uploads

  const selectRow = (id: string) =>
    Effect.map(sql<UploadRow>`SELECT * FROM media_uploads WHERE id = ${id}`, (rows) => rows[0])

  /** Every confirmed URL is remembered by digest, so a task holding it finds its upload. */
  const rememberUrl = (id: string, signed: PresignedGet) =>
    Effect.flatMap(urlDigest(signed.url), (digest) =>
      // Signed twice in one second, a URL comes out the same.
      sql`INSERT INTO media_upload_urls (url_digest, upload_id, expires_at) VALUES (${digest}, ${id}, ${signed.expiresAt})
        ON CONFLICT (url_digest) DO NOTHING`)

  /**
   * The object at the session's PUT key, copied to a key of this attempt
   * alone; only that copy is inspected and served, so nothing PUT later
   * (the PUT URL stays valid until it expires) reaches the confirmed URL.
   * The key is recorded before the copy is made, so the sweeper finds it
   * whatever happens to this call.
   */
  const pin = (row: UploadRow, pins: Array<string>) =>
    Effect.gen(function*() {
      const key = `confirmed/${row.account_id}/${row.id}-${randomBase62(8)}.${
        inspectable(row.declared_mime_type)?.extension ?? "bin"
      }`
      pins.push(key)
      // Not for a row a sweeper has claimed: that one is being removed, with the copies it knows of.
      const recorded = yield* sql`
        INSERT INTO media_upload_pins (storage_key, upload_id, created_at)
        SELECT ${key}, id, ${yield* nowSeconds} FROM media_uploads WHERE id = ${row.id} AND sweep_lease_until IS NULL
        RETURNING storage_key`
      if (recorded.length === 0) return yield* uploadNotFound(row.id)
      if (yield* storage.copy(row.storage_key, key)) return key
      return yield* new UploadNotReceived({
        message: (yield* nowSeconds) > row.session_expires_at
          ? `Upload ${row.id} has no bytes and its upload_url has expired; create a new session.`
          : `Upload ${row.id} has no bytes yet: PUT the file to its upload_url with the returned headers, then confirm.`
      })
    })

  /** Copies this call made that are not confirmed: removed, then forgotten. A failure leaves them to the sweeper. */
  const unpin = (keys: ReadonlyArray<string>) =>
    Effect.forEach(keys, (key) =>
      storage.remove(key).pipe(
        Effect.zipRight(sql`DELETE FROM media_upload_pins WHERE storage_key = ${key}`),
        Effect.catchAllCause((cause) => Effect.logWarning("removing an unconfirmed upload copy failed", cause))
      ), { discard: true, concurrency: 3 })

  /** What one id of a call will be once all are found good: a fresh confirmation, or a renewal. */
  type Prepared =
    | {
      readonly _tag: "Confirm"
      readonly row: UploadRow
      readonly key: string
      readonly found: Inspection
      readonly signed: PresignedGet
    }
    | { readonly _tag: "Renew"; readonly row: UploadRow; readonly signed: PresignedGet | undefined }

  /** All the slow work, before anything is written: copy, inspect, sign. */
  const prepare = (row: UploadRow, pins: Array<string>) =>
    Effect.gen(function*() {
      const now = yield* nowSeconds
      if (row.status === "confirmed") {
        // A URL this close to its expiry is replaced by a fresh one.
        const signed = row.url_expires_at! - now > RENEW_BEFORE_S
          ? undefined
          : yield* storage.presignGet(row.pinned_key ?? row.storage_key, { expiresInS: settings.confirmed_url_ttl_s })
        return { _tag: "Renew", row, signed } satisfies Prepared
      }
      const key = yield* pin(row, pins)
      const found = yield* inspect(row, key)
      const signed = yield* storage.presignGet(key, { expiresInS: settings.confirmed_url_ttl_s })
      return { _tag: "Confirm", row, key, found, signed } satisfies Prepared
    }).pipe(
      Effect.catchTags({
        SqlError: (e) => Effect.die(e),
        StorageError: storageFailureForCaller("copying or signing an upload failed")
      })
    )

  /** Inside the call's transaction. A row that a sweeper has claimed is gone for the caller. */
  const commit = (prepared: Prepared) =>
    Effect.gen(function*() {
      const { row } = prepared
      if (prepared._tag === "Renew") {
        if (prepared.signed === undefined) return row
        const [renewed] = yield* sql<UploadRow>`
          UPDATE media_uploads SET url = ${prepared.signed.url}, url_expires_at = ${prepared.signed.expiresAt}
          WHERE id = ${row.id} AND url = ${row.url} AND sweep_lease_until IS NULL RETURNING *`
        if (renewed !== undefined) {
          yield* rememberUrl(row.id, prepared.signed)
          return renewed
        }
      } else {
        const { found, key, signed } = prepared
        const [confirmed] = yield* sql<UploadRow>`
          UPDATE media_uploads SET status = 'confirmed', mime_type = ${found.mimeType}, size_bytes = ${found.sizeBytes},
            duration_ms = ${found.durationMs ?? null}, width = ${found.width ?? null}, height = ${found.height ?? null},
            pinned_key = ${key}, url = ${signed.url}, url_expires_at = ${signed.expiresAt}, confirmed_at = ${yield* nowSeconds}
          WHERE id = ${row.id} AND status = 'pending' AND sweep_lease_until IS NULL RETURNING *`
        if (confirmed !== undefined) {
          yield* rememberUrl(row.id, signed)
          return confirmed
        }
      }
      // Another call confirmed or renewed it meanwhile (its own bytes were inspected too), or a sweeper took it.
      const current = yield* selectRow(row.id)
      if (current === undefined || current.status !== "confirmed" || current.sweep_lease_until !== null) {
        return yield* uploadNotFound(row.id)
      }
      return current
    })

  const complete = (accountId: string, ids: ReadonlyArray<string>) =>
    Effect.gen(function*() {
      const unique = [...new Set(ids)]
      const rows = yield* sql<UploadRow>`
        SELECT * FROM media_uploads WHERE account_id = ${accountId} AND ${sql.in("id", unique)}`
      const byId = new Map(rows.map((r) => [r.id, r]))
      const ordered: Array<UploadRow> = []
      for (const id of unique) {
        const row = byId.get(id)
        if (row === undefined || row.sweep_lease_until !== null) return yield* uploadNotFound(id)
        ordered.push(row)
      }
      // Copies made by this call; those not confirmed in the end are removed, whatever the outcome.
      const pins: Array<string> = []
      const kept = new Set<string>()
      return yield* Effect.gen(function*() {
        const results = yield* Effect.forEach(ordered, (row) => Effect.either(prepare(row, pins)), { concurrency: 3 })
        // All or nothing: the first refusal in request order answers for the call.
        const prepared = yield* Either.all(results)
        const confirmed = yield* sql.withTransaction(Effect.forEach(prepared, commit))
        for (const row of confirmed) if (row.pinned_key !== null) kept.add(row.pinned_key)
        return confirmed.map(confirmedItem)
      }).pipe(Effect.ensuring(Effect.suspend(() => unpin(pins.filter((key) => !kept.has(key))))))
    }).pipe(
      Effect.catchTag("SqlError", (e) => Effect.die(e)),
      Effect.withSpan("Uploads.complete", { attributes: { "upload.count": ids.length } })
    )

  return complete
})
