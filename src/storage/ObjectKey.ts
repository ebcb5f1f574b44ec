/**
 * Object keys: segments of `[A-Za-z0-9._-]` joined by `/`, at most 1024
 * characters (S3's limit). `.` and `..` are refused so that a key used as a
 * path under the local store can never leave it.
 */
const SEGMENT = /^[A-Za-z0-9._-]+$/

export const MAX_OBJECT_KEY_LENGTH = 1024

export const isObjectKey = (key: string): boolean =>
  key.length > 0 &&
  key.length <= MAX_OBJECT_KEY_LENGTH &&
  key.split("/").every((segment) => SEGMENT.test(segment) && segment !== "." && segment !== "..")
