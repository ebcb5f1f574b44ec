import { Effect } from "effect"
import type { UploadKind } from "../media/MediaTypes.ts"
import { sha256Hex } from "../platform/Digest.ts"
import { UploadNotFound } from "./Errors.ts"

/** A row of `media_uploads`, as the session, confirmation and lookup code read it. */
export interface UploadRow {
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

export const uploadNotFound = UploadNotFound.of

/** Issued URLs of uploads are remembered and found by this digest (`media_upload_urls`, `image_uploads`). */
export const urlDigest = (url: string) => Effect.promise(() => sha256Hex(url))
