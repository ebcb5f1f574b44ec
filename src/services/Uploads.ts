import { FileSystem, Path } from "@effect/platform"
import { SqlClient } from "@effect/sql"
import { Context, Effect, Either, Layer, Option, Stream } from "effect"
import * as Errors from "../api/Errors.ts"
import { sha256Hex } from "../domain/Digest.ts"
import { IdPrefix, newId } from "../domain/Ids.ts"
import { nowSeconds } from "../domain/Time.ts"
import {
  type ConfirmedUpload,
  inspectable,
  type MediaUploadFile,
  type MediaUploadSession,
  normalizeMimeType,
  type UploadItemError,
  type UploadKind
} from "../domain/Upload.ts"
import { uploadRules } from "../plugin/ReferenceRules.ts"
import { AppConfig } from "./AppConfig.ts"
import { describeType, type Inspection, MediaInspector, SNIFF_BYTES } from "./MediaInspector.ts"
import { ObjectStorage } from "./ObjectStorage.ts"
import { Registry } from "./Registry.ts"

interface UploadRow {
  readonly id: string
  readonly account_id: string
  readonly client_id: string
  readonly kind: UploadKind
  readonly declared_mime_type: string
  readonly declared_size_bytes: number
  readonly storage_key: string
  readonly session_expires_at: number
  readonly status: "pending" | "confirmed"
  readonly mime_type: string | null
  readonly size_bytes: number | null
  readonly duration_ms: number | null
  readonly url: string | null
  readonly url_expires_at: number | null
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

const KIND_NAMES: Record<UploadKind, string> = { image: "an image", video: "a video", audio: "an audio file" }

const itemError = (id: string, code: string, message: string): UploadItemError => ({ id, code, message })

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
 * service never receives the bytes. Confirmation reads the stored object and
 * trusts nothing the client said: size, type sniffed from the bytes, and
 * duration or dimensions from the parser. A confirmed upload keeps what was
 * found, so a task using its URL is checked without fetching it again.
 */
export class Uploads extends Context.Tag("Uploads")<Uploads, {
  /** All or nothing: a file no model would accept is refused before any URL is signed. */
  readonly createSessions: (
    accountId: string,
    files: ReadonlyArray<MediaUploadFile>
  ) => Effect.Effect<ReadonlyArray<MediaUploadSession>, Errors.ApiError>
  /** Per item: confirmed uploads in request order, and an error for each other id. Never fails. */
  readonly complete: (
    accountId: string,
    ids: ReadonlyArray<string>
  ) => Effect.Effect<{ readonly data: ReadonlyArray<ConfirmedUpload>; readonly errors: ReadonlyArray<UploadItemError> }>
  /** The confirmed uploads whose current URL is one of `urls`, by URL. */
  readonly findConfirmed: (urls: ReadonlyArray<string>) => Effect.Effect<ReadonlyMap<string, ConfirmedMedia>>
}>() {
  static readonly layer = Layer.effect(
    Uploads,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const storage = yield* ObjectStorage
      const inspector = yield* MediaInspector
      const registry = yield* Registry
      const fs = yield* FileSystem.FileSystem
      const path = yield* Path.Path
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

      /** The object at the row's key, read into a temporary file (bounded by the declared size) and inspected. */
      const inspectStored = (row: UploadRow) =>
        Effect.gen(function*() {
          const id = row.id
          const fail = (code: string, message: string) => Effect.fail(itemError(id, code, message))
          const unavailable = fail("upload_inspection_failed", `Upload ${id} could not be inspected right now; try again.`)
          const head = yield* storage.head(row.storage_key)
          if (Option.isNone(head)) {
            return yield* fail(
              "upload_not_received",
              (yield* nowSeconds) > row.session_expires_at
                ? `Upload ${id} has no bytes and its upload_url has expired; create a new session.`
                : `Upload ${id} has no bytes yet: PUT the file to its upload_url with the returned headers, then confirm.`
            )
          }
          if (head.value.size !== row.declared_size_bytes) {
            return yield* fail(
              "upload_size_mismatch",
              `Upload ${id} holds ${head.value.size} bytes, not the declared ${row.declared_size_bytes}.`
            )
          }
          const content = yield* storage.read(row.storage_key)
          if (Option.isNone(content)) return yield* unavailable
          const dir = yield* fs.makeTempDirectoryScoped({ prefix: "upload-" })
          const file = path.join(dir, "media")
          const first: Array<Uint8Array> = []
          let size = 0
          const mismatch = () =>
            itemError(id, "upload_size_mismatch", `Upload ${id} holds more than the declared ${row.declared_size_bytes} bytes.`)
          yield* content.value.body.pipe(
            // Replaced since the size was read: never read more than was declared.
            Stream.mapEffect((chunk) => {
              if (size < SNIFF_BYTES) first.push(chunk)
              size += chunk.length
              return size > row.declared_size_bytes ? Effect.fail(mismatch()) : Effect.succeed(chunk)
            }),
            Stream.run(fs.sink(file))
          )
          if (size !== row.declared_size_bytes) {
            return yield* fail("upload_size_mismatch", `Upload ${id} holds ${size} bytes, not the declared ${row.declared_size_bytes}.`)
          }
          const headBytes = new Uint8Array(Math.min(size, SNIFF_BYTES))
          let at = 0
          for (const chunk of first) {
            const part = chunk.subarray(0, headBytes.length - at)
            headBytes.set(part, at)
            at += part.length
          }
          const sniffed = yield* inspector.sniff(headBytes)
          const declared = `${KIND_NAMES[row.kind]} (${row.declared_mime_type})`
          if (Option.isNone(sniffed)) {
            return yield* fail("upload_type_mismatch", `Upload ${id}: the bytes are not of a known media type, but ${declared} was declared.`)
          }
          const real = sniffed.value
          if (real.mimeType !== row.declared_mime_type || real.kind !== row.kind) {
            return yield* fail(
              "upload_type_mismatch",
              `Upload ${id}: the bytes are ${describeType(real.mimeType)} (${real.mimeType}), but ${declared} was declared.`
            )
          }
          return yield* inspector.probe(file, { mimeType: real.mimeType, kind: row.kind }, size).pipe(
            Effect.catchTag("InspectError", (e) => {
              if (e.reason === "unavailable") return unavailable
              // The spec's code for a video or audio whose real duration cannot be read.
              const code = row.kind === "image" ? "upload_unreadable" : "invalid_reference_media_duration"
              return fail(code, `Upload ${id}: ${e.message}.`)
            })
          )
        }).pipe(
          Effect.catchTags({
            StorageError: (e) =>
              Effect.zipRight(
                Effect.logError("reading an upload failed", e),
                Effect.fail(itemError(row.id, "upload_inspection_failed", `Upload ${row.id} could not be read right now; try again.`))
              ),
            SystemError: (e) =>
              Effect.zipRight(
                Effect.logError("a temporary file for an upload failed", e),
                Effect.fail(itemError(row.id, "upload_inspection_failed", `Upload ${row.id} could not be inspected right now; try again.`))
              ),
            BadArgument: (e) => Effect.die(e)
          }),
          Effect.scoped
        )

      const selectRow = (id: string) =>
        Effect.map(sql<UploadRow>`SELECT * FROM media_uploads WHERE id = ${id}`, (rows) => rows[0]!)

      /** Every confirmed URL is remembered by digest, so a task holding it finds its upload. */
      const rememberUrl = (id: string, signed: { readonly url: string; readonly expiresAt: number }) =>
        Effect.flatMap(urlDigest(signed.url), (digest) =>
          // Signed twice in one second, a URL comes out the same.
          sql`INSERT INTO media_upload_urls (url_digest, upload_id, expires_at) VALUES (${digest}, ${id}, ${signed.expiresAt})
            ON CONFLICT (url_digest) DO NOTHING`)

      /** Writes the found facts and a fresh URL; a concurrent confirmation of the same upload wins once. */
      const confirm = (row: UploadRow, found: Inspection) =>
        Effect.gen(function*() {
          const signed = yield* storage.presignGet(row.storage_key, { expiresInS: settings.confirmed_url_ttl_s })
          const now = yield* nowSeconds
          const updated = yield* sql.withTransaction(Effect.gen(function*() {
            const [updated] = yield* sql<UploadRow>`
              UPDATE media_uploads SET status = 'confirmed', mime_type = ${found.mimeType}, size_bytes = ${found.sizeBytes},
                duration_ms = ${found.durationMs ?? null}, width = ${found.width ?? null}, height = ${found.height ?? null},
                url = ${signed.url}, url_expires_at = ${signed.expiresAt}, confirmed_at = ${now}
              WHERE id = ${row.id} AND status = 'pending' RETURNING *`
            if (updated !== undefined) yield* rememberUrl(row.id, signed)
            return updated
          }))
          return updated ?? (yield* selectRow(row.id))
        })

      /** A confirmed upload answers again with its URL, renewed when it is about to expire. */
      const renew = (row: UploadRow) =>
        Effect.gen(function*() {
          const now = yield* nowSeconds
          if (row.url_expires_at! - now > RENEW_BEFORE_S) return row
          const signed = yield* storage.presignGet(row.storage_key, { expiresInS: settings.confirmed_url_ttl_s })
          const updated = yield* sql.withTransaction(Effect.gen(function*() {
            const [updated] = yield* sql<UploadRow>`
              UPDATE media_uploads SET url = ${signed.url}, url_expires_at = ${signed.expiresAt}
              WHERE id = ${row.id} AND url = ${row.url} RETURNING *`
            if (updated !== undefined) yield* rememberUrl(row.id, signed)
            return updated
          }))
          return updated ?? (yield* selectRow(row.id))
        })

      const completeOne = (row: UploadRow | undefined, id: string) =>
        Effect.gen(function*() {
          if (row === undefined) {
            return yield* Effect.fail(itemError(id, "upload_not_found", `No upload with id "${id}" under this account.`))
          }
          if (row.status === "confirmed") return confirmedItem(yield* renew(row))
          const found = yield* inspectStored(row)
          return confirmedItem(yield* confirm(row, found))
        }).pipe(
          Effect.catchTags({
            SqlError: (e) => Effect.die(e),
            StorageError: (e) =>
              Effect.zipRight(
                Effect.logError("signing a confirmed upload URL failed", e),
                Effect.fail(itemError(id, "upload_inspection_failed", `Upload ${id} could not be confirmed right now; try again.`))
              )
          }),
          Effect.either
        )

      const complete = (accountId: string, ids: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const unique = [...new Set(ids)]
          const rows = yield* sql<UploadRow>`
            SELECT * FROM media_uploads WHERE account_id = ${accountId} AND ${sql.in("id", unique)}`.pipe(Effect.orDie)
          const byId = new Map(rows.map((r) => [r.id, r]))
          const results = yield* Effect.forEach(unique, (id) => completeOne(byId.get(id), id), { concurrency: 3 })
          return {
            data: results.filter(Either.isRight).map((r) => r.right),
            errors: results.filter(Either.isLeft).map((r) => r.left)
          }
        }).pipe(Effect.withSpan("Uploads.complete", { attributes: { "upload.count": ids.length } }))

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

      return { createSessions, complete, findConfirmed }
    })
  )
}
