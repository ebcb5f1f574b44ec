import type { SqlClient } from "@effect/sql"
import type { Claim } from "../Claim.ts"
import type { NewAsset } from "../TaskOutcomes.ts"

/** One result file of a succeeding task, as an asset of its account (written in the success transaction). */
export const insertAsset = (sql: SqlClient.SqlClient, claim: Claim, asset: NewAsset, now: number) =>
  sql`
    INSERT INTO assets (id, account_id, task_id, kind, storage_key, mime_type, filename, size_bytes, width, height,
      duration_ms, url, url_auth, expires_at, created_at)
    VALUES (${asset.id}, ${claim.accountId}, ${claim.id}, ${claim.kind}, ${asset.storageKey}, ${asset.mimeType},
      ${asset.filename}, ${asset.sizeBytes}, ${asset.width}, ${asset.height}, ${asset.durationMs},
      ${asset.url}, ${asset.urlAuth}, ${asset.expiresAt}, ${now})`
