/**
 * Direct uploads of reference media (spec: Media upload session, Confirmed
 * upload). A row is made with its pre-signed PUT URL and stays `pending`
 * until a confirmation has read the object and found it to be what was
 * declared; then it holds what was found (type, size, duration, dimensions)
 * and its current confirmed URL. Every confirmed URL ever issued is kept by
 * digest in `media_upload_urls`, so a task holding an older (renewed) URL
 * still finds its upload: a confirmed reference is checked, and never
 * fetched, by what was found at confirmation.
 */
export default [
  `CREATE TABLE media_uploads (
    id text PRIMARY KEY,
    account_id text NOT NULL REFERENCES accounts (id),
    client_id text NOT NULL,
    kind text NOT NULL CHECK (kind IN ('image', 'video', 'audio')),
    filename text NOT NULL,
    declared_mime_type text NOT NULL,
    declared_size_bytes bigint NOT NULL,
    storage_key text NOT NULL,
    session_expires_at bigint NOT NULL,
    status text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'confirmed')),
    mime_type text,
    size_bytes bigint,
    duration_ms integer,
    width integer,
    height integer,
    url text,
    url_expires_at bigint,
    created_at bigint NOT NULL,
    confirmed_at bigint,
    CHECK (status = 'pending' OR (mime_type IS NOT NULL AND size_bytes IS NOT NULL AND url IS NOT NULL
      AND url_expires_at IS NOT NULL))
  )`,
  `CREATE INDEX media_uploads_account ON media_uploads (account_id, created_at)`,
  `CREATE TABLE media_upload_urls (
    url_digest text PRIMARY KEY,
    upload_id text NOT NULL REFERENCES media_uploads (id),
    expires_at bigint NOT NULL
  )`,
  `CREATE INDEX media_upload_urls_upload ON media_upload_urls (upload_id)`
]
