import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../platform/AppConfig.ts"
import { nowSeconds } from "../platform/Time.ts"
import { ObjectStorage } from "../storage/ObjectStorage.ts"
import { removeObjectsOf } from "../storage/RemoveObjects.ts"
import { requestUrlDigests } from "./RequestUrlDigests.ts"

/**
 * A claim outlives a sweep by far; only a sweeper that died holding rows lets
 * it run out, and then another one takes them over.
 */
const LEASE_S = 600

export interface SweepCounts {
  /** Media upload sessions never confirmed, removed after their PUT URL expired. */
  readonly sessions: number
  /** Confirmed media uploads, removed after their confirmed URL expired. */
  readonly confirmed: number
  /** Image pre-uploads, removed after their URL expired. */
  readonly images: number
}

/**
 * Removes uploads whose URLs have expired (README: Upload lifecycle). Safe
 * with any number of replicas: a sweep claims rows with one statement
 * (`FOR UPDATE SKIP LOCKED`, then a lease in `sweep_lease_until`), so no two
 * sweepers take the same row; a claimed row is never confirmed or renewed
 * again. It removes the objects, then the rows: a sweeper that dies in
 * between leaves rows whose lease runs out, and the next one removes the
 * (possibly missing) objects again.
 */
export class UploadSweep extends Context.Tag("UploadSweep")<UploadSweep, {
  /** One pass: batches are claimed and removed until one comes back short. */
  readonly sweep: Effect.Effect<SweepCounts>
}>() {
  static readonly layer = Layer.effect(
    UploadSweep,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const storage = yield* ObjectStorage
      const { sweep_batch: batch, sweep_grace_s: grace } = (yield* AppConfig).limits.uploads

      /** One batch of media uploads: sessions past their PUT URL, confirmed uploads past their URL and unreferenced. */
      const mediaBatch = Effect.gen(function*() {
        const now = yield* nowSeconds
        const lease = now + LEASE_S
        const claimed = yield* sql<{ id: string; storage_key: string; status: "pending" | "confirmed" }>`
          -- The URLs of queued and running tasks: an upload with one of them is still needed (the engine looks it
          -- up by URL, or fetches it), so it stays until that task ends.
          WITH referenced AS MATERIALIZED (${requestUrlDigests(sql, sql`t.status IN ('queued', 'in_progress')`)})
          UPDATE media_uploads SET sweep_lease_until = ${lease}
          WHERE id IN (
            SELECT u.id FROM media_uploads u
            WHERE (u.sweep_lease_until IS NULL OR u.sweep_lease_until < ${now})
              AND ((u.status = 'pending' AND u.session_expires_at < ${now - grace})
                OR (u.status = 'confirmed' AND u.url_expires_at < ${now - grace} AND NOT EXISTS (
                  SELECT 1 FROM media_upload_urls m
                  WHERE m.upload_id = u.id AND m.url_digest IN (SELECT url_digest FROM referenced))))
            LIMIT ${batch}
            FOR UPDATE OF u SKIP LOCKED)
          RETURNING id, storage_key, status`
        if (claimed.length === 0) return { claimed: 0, sessions: 0, confirmed: 0 }
        // Every copy confirmation made, the confirmed one among them.
        const pins = yield* sql<{ upload_id: string; storage_key: string }>`
          SELECT upload_id, storage_key FROM media_upload_pins WHERE ${sql.in("upload_id", claimed.map((r) => r.id))}`
        const removed = yield* removeObjectsOf(storage, claimed, (row) => [
          row.storage_key,
          ...pins.filter((p) => p.upload_id === row.id).map((p) => p.storage_key)
        ], "an expired upload")
        if (removed.length > 0) {
          yield* sql.withTransaction(Effect.gen(function*() {
            // Only rows still under this sweep's lease: one that ran out may be another sweeper's by now.
            const mine = (yield* sql<{ id: string }>`
              SELECT id FROM media_uploads WHERE ${sql.in("id", removed)} AND sweep_lease_until = ${lease} FOR UPDATE`)
              .map((r) => r.id)
            if (mine.length === 0) return
            yield* sql`DELETE FROM media_upload_pins WHERE ${sql.in("upload_id", mine)}`
            yield* sql`DELETE FROM media_upload_urls WHERE ${sql.in("upload_id", mine)}`
            yield* sql`DELETE FROM media_uploads WHERE ${sql.in("id", mine)}`
          }))
        }
        const done = new Set(removed)
        const count = (status: "pending" | "confirmed") =>
          claimed.filter((r) => r.status === status && done.has(r.id)).length
        return { claimed: claimed.length, sessions: count("pending"), confirmed: count("confirmed") }
      })

      /** One batch of image pre-uploads past their URL and unreferenced. */
      const imageBatch = Effect.gen(function*() {
        const now = yield* nowSeconds
        const lease = now + LEASE_S
        const claimed = yield* sql<{ id: string; storage_key: string }>`
          -- The URLs of queued and running tasks: an upload with one of them is still needed (the engine looks it
          -- up by URL, or fetches it), so it stays until that task ends.
          WITH referenced AS MATERIALIZED (${requestUrlDigests(sql, sql`t.status IN ('queued', 'in_progress')`)})
          UPDATE image_uploads SET sweep_lease_until = ${lease}
          WHERE id IN (
            SELECT i.id FROM image_uploads i
            WHERE (i.sweep_lease_until IS NULL OR i.sweep_lease_until < ${now})
              AND i.expires_at < ${now - grace}
              AND i.url_digest NOT IN (SELECT url_digest FROM referenced)
            LIMIT ${batch}
            FOR UPDATE OF i SKIP LOCKED)
          RETURNING id, storage_key`
        if (claimed.length === 0) return { claimed: 0, images: 0 }
        const removed = yield* removeObjectsOf(storage, claimed, (row) => [row.storage_key], "an expired upload")
        if (removed.length > 0) {
          yield* sql`DELETE FROM image_uploads WHERE ${sql.in("id", removed)} AND sweep_lease_until = ${lease}`
        }
        return { claimed: claimed.length, images: removed.length }
      })

      const sweep = Effect.gen(function*() {
        const counts = { sessions: 0, confirmed: 0, images: 0 }
        while (true) {
          const media = yield* mediaBatch
          counts.sessions += media.sessions
          counts.confirmed += media.confirmed
          if (media.claimed < batch) break
        }
        while (true) {
          const images = yield* imageBatch
          counts.images += images.images
          if (images.claimed < batch) break
        }
        return counts as SweepCounts
      }).pipe(Effect.orDie, Effect.withSpan("UploadSweep.sweep"))

      return { sweep }
    })
  )
}
