/**
 * How long an upstream asked us to wait before calling again, in
 * milliseconds, from whichever form it used: OpenAI's `retry-after-ms`, the
 * standard `Retry-After` (delta seconds or an HTTP date), or Google's
 * `RetryInfo.retryDelay` ("7s", "1.5s") inside an error body. Undefined when
 * it said nothing usable; capped so a hostile or broken upstream cannot park
 * a task for days.
 */
export const MAX_RETRY_HINT_MS = 10 * 60 * 1000

const capped = (ms: number) => (Number.isFinite(ms) && ms >= 0 ? Math.min(ms, MAX_RETRY_HINT_MS) : undefined)

export const retryHintMs = (
  headers: Readonly<Record<string, string | undefined>>,
  body?: unknown,
  now: number = Date.now()
): number | undefined => {
  const ms = headers["retry-after-ms"]?.trim()
  if (ms !== undefined && /^\d+(\.\d+)?$/.test(ms)) return capped(Number(ms))
  const after = headers["retry-after"]?.trim()
  if (after !== undefined && after !== "") {
    if (/^\d+(\.\d+)?$/.test(after)) return capped(Number(after) * 1000)
    const at = Date.parse(after)
    if (!Number.isNaN(at)) return capped(Math.max(0, at - now))
  }
  return googleRetryDelay(body)
}

/** `error.details[]` entry of type `google.rpc.RetryInfo`, whose `retryDelay` is a protobuf Duration string. */
const googleRetryDelay = (body: unknown): number | undefined => {
  const details = (body as { error?: { details?: unknown } } | undefined)?.error?.details
  if (!Array.isArray(details)) return undefined
  for (const detail of details) {
    const type = (detail as { "@type"?: unknown })?.["@type"]
    const delay = (detail as { retryDelay?: unknown })?.retryDelay
    if (typeof type === "string" && type.endsWith("google.rpc.RetryInfo") && typeof delay === "string") {
      const match = /^(\d+(?:\.\d+)?)s$/.exec(delay.trim())
      if (match) return capped(Number(match[1]) * 1000)
    }
  }
  return undefined
}
