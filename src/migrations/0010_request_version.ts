/**
 * The version of the stored task request (src/tasks/StoredRequest.ts), so a
 * worker of one release can tell whether it can read a request another
 * release wrote. Rows written before are version 1: the shape of this release.
 */
export default [
  `ALTER TABLE tasks ADD COLUMN request_version integer NOT NULL DEFAULT 1`
]
