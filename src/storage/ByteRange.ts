/** What a request's `Range` header asks of an object of `size` bytes. */
export type RangeRequest =
  | { readonly _tag: "Full" }
  | { readonly _tag: "Partial"; readonly start: number; readonly end: number } // end inclusive
  | { readonly _tag: "Unsatisfiable" }

const FULL: RangeRequest = { _tag: "Full" }
const UNSATISFIABLE: RangeRequest = { _tag: "Unsatisfiable" }
const SINGLE_RANGE = /^bytes=(\d*)-(\d*)$/i

/**
 * One `bytes=a-b`, `bytes=a-` or `bytes=-n` range (RFC 9110 §14). Anything
 * else (several ranges, another unit, a malformed or reversed range) is
 * ignored and the whole object is served, which the RFC allows. A request
 * with `If-Range` also gets the whole object: objects carry no validator to
 * compare it with, and serving a part of a changed object would corrupt a
 * resumed download.
 */
export const resolveRange = (
  header: string | undefined,
  size: number,
  ifRange: string | undefined = undefined
): RangeRequest => {
  if (header === undefined || ifRange !== undefined) return FULL
  const match = SINGLE_RANGE.exec(header.trim())
  if (match === null) return FULL
  const [, first = "", last = ""] = match
  if (first === "" && last === "") return FULL
  if (first === "") {
    const suffix = Number(last)
    if (suffix === 0 || size === 0) return UNSATISFIABLE
    return { _tag: "Partial", start: Math.max(0, size - suffix), end: size - 1 }
  }
  const start = Number(first)
  if (last !== "" && Number(last) < start) return FULL
  if (start >= size) return UNSATISFIABLE
  return { _tag: "Partial", start, end: last === "" ? size - 1 : Math.min(Number(last), size - 1) }
}
