import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { uploadRules } from "../catalog/ReferenceRules.ts"
import { Registry } from "../catalog/Registry.ts"
import { inspectable, normalizeMimeType, type UploadKind } from "../media/MediaTypes.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { InternalError } from "../platform/Failure.ts"
import { IdPrefix, newId } from "../platform/Ids.ts"
import { nowSeconds } from "../platform/Time.ts"
import { storageFailureForCaller } from "../storage/CallerFailure.ts"
import type { StorageUnavailable } from "../storage/Errors.ts"
import { ObjectStorage, type StorageError } from "../storage/ObjectStorage.ts"
import { makeConfirmation } from "./Confirmation.ts"
import { InvalidUpload, type UploadError } from "./Errors.ts"
import type { ConfirmedUpload, MediaUploadFile, MediaUploadSession } from "./Upload.ts"
import { type UploadRow, urlDigest } from "./UploadRow.ts"

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
  ) => Effect.Effect<ReadonlyArray<MediaUploadSession>, InvalidUpload | InternalError | StorageUnavailable>
  /**
   * All or nothing (docs/uploads.md, The three steps): the uploads in request
   * order, each confirmed (or confirmed before), or the first refusal and none
   * confirmed.
   */
  readonly complete: (
    accountId: string,
    ids: ReadonlyArray<string>
  ) => Effect.Effect<ReadonlyArray<ConfirmedUpload>, UploadError>
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
      const { limits } = yield* AppConfig
      const settings = limits.uploads
      const rules = uploadRules(registry.videoModels.map((m) => m.capability))
      const complete = yield* makeConfirmation

      const createSessions = (accountId: string, files: ReadonlyArray<MediaUploadFile>) =>
        Effect.gen(function*() {
          const checked = yield* Effect.forEach(files, (file, i) => {
            const where = `files[${i}]`
            const rule = rules[file.kind]
            if (rule === undefined) {
              return new InvalidUpload({ message: `${where}.kind: no available model takes ${file.kind} references.` })
            }
            const mimeType = normalizeMimeType(file.mime_type)
            if (!rule.mimeTypes.includes(mimeType)) {
              return new InvalidUpload({
                message: `${where}.mime_type "${file.mime_type}" is not accepted for ${file.kind}; accepted: ${
                  rule.mimeTypes.join(", ")
                }.`
              })
            }
            if (file.size_bytes > rule.maxBytes) {
              return new InvalidUpload({
                message:
                  `${where}.size_bytes is ${file.size_bytes}; ${file.kind} uploads are at most ${rule.maxBytes} bytes.`
              })
            }
            return Effect.succeed({ file, mimeType, extension: inspectable(mimeType)?.extension ?? "bin" })
          })
          // A URL into a store that is away or full would only fail the caller's PUT: 503 now, try later.
          yield* storage.available
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
            StorageError: storageFailureForCaller("signing an upload URL failed")
          }),
          Effect.withSpan("Uploads.createSessions", { attributes: { "upload.count": files.length } })
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
            VALUES (${id}, ${accountId}, ${key}, ${yield* urlDigest(
            signed.url
          )}, ${signed.expiresAt}, ${yield* nowSeconds})`
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
