/**
 * The assets API (`/v1/assets`). An asset row now holds what its object
 * shows without reading the task: its kind, the URL its task's result item
 * carries with that URL's `url_auth` and expiry (null when permanent), and a
 * `seq` that orders assets exactly as they were created, also within one
 * second (ids are random, `created_at` is in seconds). A deleted asset keeps
 * its row with `deleted_at` set, so a page cursor naming it still continues
 * the listing; its bytes are gone from object storage.
 *
 * Rows written before this migration are filled from their task: the result
 * item with the same `asset_id` gives the URL (every asset is written in the
 * same transaction as that result); `url_auth` is the item's when it has one
 * (video), otherwise told by the URL (a `/v1/assets/…/content` URL is
 * `resource_api_key`); a signed URL's expiry is read from the URL itself
 * (the local store's `X-Expires`, S3's `X-Amz-Date` + `X-Amz-Expires`).
 * Their `seq` follows `created_at`, then id.
 */
export default [
  `ALTER TABLE assets ADD COLUMN seq bigint`,
  `ALTER TABLE assets ADD COLUMN kind text`,
  `ALTER TABLE assets ADD COLUMN url text`,
  `ALTER TABLE assets ADD COLUMN url_auth text`,
  `ALTER TABLE assets ADD COLUMN expires_at bigint`,
  `ALTER TABLE assets ADD COLUMN deleted_at bigint`,
  `UPDATE assets a SET kind = t.kind FROM tasks t WHERE t.id = a.task_id`,
  `UPDATE assets a
    SET url = item ->> 'url',
      url_auth = COALESCE(item ->> 'url_auth',
        CASE WHEN item ->> 'url' LIKE '%/v1/assets/%/content' THEN 'resource_api_key' ELSE 'none' END)
    FROM tasks t, jsonb_array_elements(COALESCE(t.result -> 'videos', t.result -> 'images', '[]'::jsonb)) AS item
    WHERE t.id = a.task_id AND item ->> 'asset_id' = a.id`,
  // X-Amz-Date is UTC; to_timestamp reads it in the session's zone.
  `SET LOCAL TimeZone = 'UTC'`,
  `UPDATE assets SET expires_at = COALESCE(
      substring(url FROM '[?&]X-Expires=([0-9]+)')::bigint,
      extract(epoch FROM to_timestamp(substring(url FROM '[?&]X-Amz-Date=([0-9]{8}T[0-9]{6})Z'), 'YYYYMMDD"T"HH24MISS'))::bigint
        + substring(url FROM '[?&]X-Amz-Expires=([0-9]+)')::bigint)
    WHERE url_auth = 'none'`,
  `CREATE SEQUENCE assets_seq AS bigint OWNED BY assets.seq`,
  `UPDATE assets a SET seq = o.n
    FROM (SELECT id, row_number() OVER (ORDER BY created_at, id) AS n FROM assets) o
    WHERE o.id = a.id`,
  `SELECT setval('assets_seq', (SELECT COALESCE(max(seq), 0) + 1 FROM assets), false)`,
  `ALTER TABLE assets ALTER COLUMN seq SET DEFAULT nextval('assets_seq')`,
  `ALTER TABLE assets ALTER COLUMN seq SET NOT NULL`,
  `ALTER TABLE assets ALTER COLUMN kind SET NOT NULL`,
  `ALTER TABLE assets ALTER COLUMN url SET NOT NULL`,
  `ALTER TABLE assets ALTER COLUMN url_auth SET NOT NULL`,
  `ALTER TABLE assets ADD CONSTRAINT assets_kind_check CHECK (kind IN ('video', 'image'))`,
  `ALTER TABLE assets ADD CONSTRAINT assets_url_auth_check CHECK (url_auth IN ('none', 'resource_api_key'))`,
  `CREATE UNIQUE INDEX assets_seq_unique ON assets (seq)`,
  // The listing: one account's live assets, newest first.
  `CREATE INDEX assets_listing ON assets (account_id, seq DESC) WHERE deleted_at IS NULL`
]
