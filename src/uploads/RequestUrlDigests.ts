import type { SqlClient } from "@effect/sql"
import type { Fragment } from "@effect/sql/Statement"

/**
 * The digests of every URL in the requests of the tasks `where` selects
 * (`t` is the task), with the task's account: the form in which Uploads
 * records an upload's URLs (`media_upload_urls.url_digest`,
 * `image_uploads.url_digest`), so a query can tell which uploads requests
 * use without reading the URLs back.
 */
export const requestUrlDigests = (sql: SqlClient.SqlClient, where: Fragment) =>
  sql`
    SELECT DISTINCT t.account_id, encode(sha256(convert_to(u.value #>> '{}', 'UTF8')), 'hex') AS url_digest
    FROM tasks t CROSS JOIN LATERAL jsonb_path_query(t.request, 'lax $.**.url') AS u(value)
    WHERE ${where} AND jsonb_typeof(u.value) = 'string'`
