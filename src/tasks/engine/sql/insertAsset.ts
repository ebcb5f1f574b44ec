import type { SqlClient } from "@effect/sql"
import type { UrlAuth } from "../../../assets/Asset.ts"
import type { Claim } from "../Claim.ts"

/** A stored output, as the success of its task records it. */
export interface NewAsset {
  readonly id: string
  readonly storageKey: string
  readonly mimeType: string
  readonly filename: string
  readonly sizeBytes: number
  readonly width: number | null
  readonly height: number | null
  readonly durationMs: number | null
  /** The URL the result item carries, how it is authenticated, and when it stops working (null: never). */
  readonly url: string
  readonly urlAuth: UrlAuth
  readonly expiresAt: number | null
}

/** One result file of a succeeding task, as an asset of its account (written in the success transaction). */
export const insertAsset = (sql: SqlClient.SqlClient, claim: Claim, asset: NewAsset, now: number) =>
  sql`
    INSERT INTO assets (id, account_id, task_id, kind, storage_key, mime_type, filename, size_bytes, width, height,
      duration_ms, url, url_auth, expires_at, created_at)
    VALUES (${asset.id}, ${claim.accountId}, ${claim.id}, ${claim.kind}, ${asset.storageKey}, ${asset.mimeType},
      ${asset.filename}, ${asset.sizeBytes}, ${asset.width}, ${asset.height}, ${asset.durationMs},
      ${asset.url}, ${asset.urlAuth}, ${asset.expiresAt}, ${now})`
