import { SqlClient } from "@effect/sql"
import { Context, Effect, Either, Layer } from "effect"
import * as Errors from "../api/Errors.ts"
import { sha256Hex } from "../domain/Digest.ts"
import { IdPrefix, newId, randomBase62 } from "../domain/Ids.ts"
import { nowSeconds } from "../domain/Time.ts"
import {
  type ConfirmedUpload,
  inspectable,
  type MediaUploadFile,
  type MediaUploadSession,
  normalizeMimeType,
  type UploadKind
} from "../domain/Upload.ts"
import { uploadRules } from "../plugin/ReferenceRules.ts"
import { AppConfig } from "./AppConfig.ts"
import type { Inspection } from "./MediaInspector.ts"
import { ObjectStorage, type PresignedGet, type StorageError } from "./ObjectStorage.ts"
import { Registry } from "./Registry.ts"
import { inspectionUnavailable, makeUploadInspection } from "./UploadInspection.ts"

interface UploadRow {
  readonly id: string
  readonly account_id: string
  readonly client_id: string
  readonly kind: UploadKind
  readonly declared_mime_type: string
  readonly declared_size_bytes: number
  /** Where the session's PUT URL writes. */
  readonly storage_key: string
  readonly session_expires_at: number
  readonly status: "pending" | "confirmed"
  readonly mime_type: string | null
  readonly size_bytes: number | null
  readonly duration_ms: number | null
  /** The inspected copy the confirmed URL serves; null for uploads confirmed before copies were made. */
  readonly pinned_key: string | null
  readonly url: string | null
  readonly url_expires_at: number | null
  /** Set when a sweeper claims the row: it is being removed. */
  readonly sweep_lease_until: number | null
}

/** A confirmed upload as the task checks see it. */
export interface ConfirmedMedia {
  readonly id: string
  readonly kind: UploadKind
  readonly mimeType: string
  readonly sizeBytes: number
  readonly durationMs: number | undefined
  /** The expiry of the URL it was found by (an older URL of a renewed upload expires earlier). */
  readonly urlExpiresAt: number
}

/** A confirmed URL this close to its expiry is replaced by a fresh one when confirmed again. */
const RENEW_BEFORE_S = 300

const uploadNotFound = (id: string) => Errors.notFound("upload_not_found", `No upload with id "${id}" under this account.`)

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

const urlDigest = (url: string) => Effect.promise(() => sha256Hex(url))

/**
 * Direct uploads of reference media (spec: the three-step flow). Sessions
 * hand out pre-signed PUT URLs that bind the declared type and size; the
 * service never receives the bytes. Confirmation copies the object to a key
 * no URL writes to and inspects that copy, trusting nothing the client said:
 * size, type sniffed from the bytes, and duration or dimensions from the
 * parser. A confirmed upload keeps what was found, so a task using its URL is
 * checked without fetching it again. Image pre-uploads are stored here too.
 * The sweeper (`UploadSweep`) removes all of them once their URLs expire.
 */
export class Uploads extends Context.Tag("Uploads")<Uploads, {
  /** All or nothing: a file no model would accept is refused before any URL is signed. */
  readonly createSessions: (
    accountId: string,
    files: ReadonlyArray<MediaUploadFile>
  ) => Effect.Effect<ReadonlyArray<MediaUploadSession>, Errors.ApiError>
  /**
   * All or nothing (DESIGN.md, Confirming uploads): the uploads in request
   * order, each confirmed (or confirmed before), or the first refusal and
   * none confirmed.
   */
  readonly complete: (
    accountId: string,
    ids: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<ConfirmedUpload>, Errors.ApiError>
  /** Stores one checked image pre-upload; its URL, valid `image_url_ttl_s`. */
  readonly storeImage: (accountId: string, bytes: Uint8Array, mimeType: string) => Effect.Effect<string, StorageError>
  /** The confirmed uploads whose current URL is one of `urls`, by URL. */
  readonly findConfirmed: (urls: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, ConfirmedMedia>>
}>() {
  static readonly layer = Layer.effect(
    Uploads,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const storage = yield* ObjectStorage
      const registry = yield* Registry
      const inspect = yield* makeUploadInspection
      const { limits } = yield* AppConfig
      const settings = limits.uploads
      const rules = uploadRules(registry.videoModels.map((m) => m.capability))

      const createSessions = (accountId: string, files: ReadonlyArray<MediaUploadFile>) =>
        Effect.gen(function*() {
          const checked = yield* Effect.forEach(files, (file, i) => {
            const where = `files[${i}]`
            const rule = rules[file.kind]
            if (rule === undefined) {
              return Errors.badRequest("invalid_request", `${where}.kind: no available model takes ${file.kind} references.`)
            }
            const mimeType = normalizeMimeType(file.mime_type)
            if (!rule.mimeTypes.includes(mimeType)) {
              return Errors.badRequest(
                "invalid_request",
                `${where}.mime_type "${file.mime_type}" is not accepted for ${file.kind}; accepted: ${rule.mimeTypes.join(", ")}.`
              )
            }
            if (file.size_bytes > rule.maxBytes) {
              return Errors.badRequest(
                "invalid_request",
                `${where}.size_bytes is ${file.size_bytes}; ${file.kind} uploads are at most ${rule.maxBytes} bytes.`
              )
            }
            return Effect.succeed({ file, mimeType, extension: inspectable(mimeType)?.extension ?? "bin" })
          })
          const now = yield* nowSeconds
          return yield* Effect.forEach(checked, ({ extension, file, mimeType }) =>
            Effect.gen(function*() {
              const id = newId(IdPrefix.upload)
              const storageKey = `uploads/${accountId}/${id}.${extension}`
              const signed = yield* storage.presignPut(storageKey, {
                contentType: mimeType,
                contentLength: file.size_bytes,
                expiresInS: settings.session_url_ttl_s
              })
              yield* sql`
                INSERT INTO media_uploads (id, account_id, client_id, kind, filename, declared_mime_type, declared_size_bytes,
                  storage_key, session_expires_at, created_at)
                VALUES (${id}, ${accountId}, ${file.client_id}, ${file.kind}, ${file.filename}, ${mimeType}, ${file.size_bytes},
                  ${storageKey}, ${signed.expiresAt}, ${now})`
              return {
                id,
                client_id: file.client_id,
                kind: file.kind,
                method: "PUT" as const,
                upload_url: signed.url,
                headers: signed.headers,
                expires_at: signed.expiresAt
              }
            }))
        }).pipe(
          Effect.catchTags({
            SqlError: (e) => Effect.die(e),
            StorageError: (e) => Effect.zipRight(Effect.logError("signing an upload URL failed", e), Effect.fail(Errors.internalError()))
          }),
          Effect.withSpan("Uploads.createSessions", { attributes: { "upload.count": files.length } })
        )

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
          const key = `confirmed/${row.account_id}/${row.id}-${randomBase62(8)}.${inspectable(row.declared_mime_type)?.extension ?? "bin"}`
          pins.push(key)
          // Not for a row a sweeper has claimed: that one is being removed, with the copies it knows of.
          const recorded = yield* sql`
            INSERT INTO media_upload_pins (storage_key, upload_id, created_at)
            SELECT ${key}, id, ${yield* nowSeconds} FROM media_uploads WHERE id = ${row.id} AND sweep_lease_until IS NULL
            RETURNING storage_key`
          if (recorded.length === 0) return yield* uploadNotFound(row.id)
          if (yield* storage.copy(row.storage_key, key)) return key
          return yield* Errors.conflict(
            "upload_not_received",
            (yield* nowSeconds) > row.session_expires_at
              ? `Upload ${row.id} has no bytes and its upload_url has expired; create a new session.`
              : `Upload ${row.id} has no bytes yet: PUT the file to its upload_url with the returned headers, then confirm.`
          )
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
        | { readonly _tag: "Confirm"; readonly row: UploadRow; readonly key: string; readonly found: Inspection; readonly signed: PresignedGet }
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
            StorageError: (e) => Effect.zipRight(Effect.logError("copying or signing an upload failed", e), Effect.fail(inspectionUnavailable(row.id)))
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

      /**
       * An image pre-upload: recorded (key, URL digest, expiry) before it is
       * stored, so the sweeper can remove it once its URL has expired.
       */
      const storeImage = (accountId: string, bytes: Uint8Array, mimeType: string) =>
        Effect.gen(function*() {
          const id = newId(IdPrefix.imageUpload)
          const key = `image-uploads/${accountId}/${id}.${inspectable(mimeType)?.extension ?? "bin"}`
          const signed = yield* storage.presignGet(key, { expiresInS: settings.image_url_ttl_s })
          yield* sql`INSERT INTO image_uploads (id, account_id, storage_key, url_digest, expires_at, created_at)
            VALUES (${id}, ${accountId}, ${key}, ${yield* urlDigest(signed.url)}, ${signed.expiresAt}, ${yield* nowSeconds})`
          yield* storage.put(key, bytes, mimeType)
          return signed.url
        }).pipe(Effect.catchTag("SqlError", (e) => Effect.die(e)))

      const findConfirmed = (urls: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const found = new Map<string, ConfirmedMedia>()
          if (urls.length === 0) return found
          const byDigest = new Map<string, string>()
          for (const url of new Set(urls)) byDigest.set(yield* urlDigest(url), url)
          const rows = yield* sql<UploadRow & { readonly matched_digest: string; readonly matched_expires_at: number }>`
            SELECT u.*, m.url_digest AS matched_digest, m.expires_at AS matched_expires_at
            FROM media_upload_urls m JOIN media_uploads u ON u.id = m.upload_id
            WHERE ${sql.in("m.url_digest", [...byDigest.keys()])}`.pipe(Effect.orDie)
          for (const row of rows) {
            found.set(byDigest.get(row.matched_digest)!, {
              id: row.id,
              kind: row.kind,
              mimeType: row.mime_type!,
              sizeBytes: row.size_bytes!,
              durationMs: row.duration_ms ?? undefined,
              urlExpiresAt: row.matched_expires_at
            })
          }
          return found as ReadonlyMap<string, ConfirmedMedia>
        })

      return { createSessions, complete, storeImage, findConfirmed }
    })
  )
}
