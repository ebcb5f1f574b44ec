/**
 * The lifecycle of uploads. Confirmation pins the bytes: it copies the
 * object at the session's PUT key to a key of its own (recorded in
 * `media_upload_pins` before the copy is made, so no copy is ever unknown)
 * and the confirmed URL serves that copy (`pinned_key`), which nothing can
 * write again. Image pre-uploads are recorded in `image_uploads` with the
 * digest of their URL. The sweeper claims expired rows by setting
 * `sweep_lease_until` (a claimed row is never confirmed or renewed again),
 * removes their objects, then the rows.
 */
export default [
  `ALTER TABLE media_uploads ADD COLUMN pinned_key text`,
  `ALTER TABLE media_uploads ADD COLUMN sweep_lease_until bigint`,
  `CREATE TABLE media_upload_pins (
    storage_key text PRIMARY KEY,
    upload_id text NOT NULL REFERENCES media_uploads (id),
    created_at bigint NOT NULL
  )`,
  `CREATE INDEX media_upload_pins_upload ON media_upload_pins (upload_id)`,
  `CREATE INDEX media_uploads_pending_expiry ON media_uploads (session_expires_at) WHERE status = 'pending'`,
  `CREATE INDEX media_uploads_confirmed_expiry ON media_uploads (url_expires_at) WHERE status = 'confirmed'`,
  `CREATE TABLE image_uploads (
    id text PRIMARY KEY,
    account_id text NOT NULL REFERENCES accounts (id),
    storage_key text NOT NULL,
    url_digest text NOT NULL,
    expires_at bigint NOT NULL,
    created_at bigint NOT NULL,
    sweep_lease_until bigint
  )`,
  `CREATE INDEX image_uploads_expiry ON image_uploads (expires_at)`,
  `CREATE INDEX image_uploads_url ON image_uploads (url_digest)`
]
