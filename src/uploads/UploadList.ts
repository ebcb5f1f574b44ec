import type { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/** A confirmed upload as the console lists it: what inspection found, and until when its URL works. */
export interface ConfirmedUploadSummary {
  readonly id: string
  readonly object: "media_upload"
  readonly kind: "image" | "video" | "audio"
  readonly filename: string
  readonly mime_type: string
  readonly size_bytes: number
  readonly duration_ms: number | null
  readonly width: number | null
  readonly height: number | null
  readonly url: string
  readonly expires_at: number
  readonly confirmed_at: number
}

/** The stored columns: the summary less its constant `object`, with the URL's expiry under its column name. */
type Row = Omit<ConfirmedUploadSummary, "object" | "expires_at"> & { readonly url_expires_at: number }

/** An account's confirmed uploads whose URL still works, newest first (pending sessions are not resources yet). */
export const listConfirmedUploads = (sql: SqlClient.SqlClient, accountId: string, now: number, limit: number) =>
  sql<Row>`
    SELECT id, kind, filename, mime_type, size_bytes, duration_ms, width, height, url, url_expires_at, confirmed_at
    FROM media_uploads
    WHERE account_id = ${accountId} AND status = 'confirmed' AND url_expires_at > ${now}
    ORDER BY confirmed_at DESC, id DESC LIMIT ${limit}`.pipe(
    Effect.map((rows) =>
      rows.map((r): ConfirmedUploadSummary => ({
        id: r.id,
        object: "media_upload",
        kind: r.kind,
        filename: r.filename,
        mime_type: r.mime_type,
        size_bytes: Number(r.size_bytes),
        duration_ms: r.duration_ms,
        width: r.width,
        height: r.height,
        url: r.url,
        expires_at: Number(r.url_expires_at),
        confirmed_at: Number(r.confirmed_at)
      }))
    ),
    Effect.orDie
  )
