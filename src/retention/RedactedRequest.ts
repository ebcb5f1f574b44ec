/** What stands in for a value the caller sent once it is redacted. */
export const REDACTED = "[redacted]"

/** Members of a stored request that hold what the caller wrote or pointed at: replaced wherever they occur. */
const WRITTEN = new Set(["prompt", "negative_prompt", "url", "name", "storageKey"])

/** Members whose whole value is the caller's own (free-form objects): emptied. */
const FREE_FORM = new Set(["metadata", "providerOptions"])

/**
 * A stored task request (`tasks.request`, StoredRequest.ts) without what a
 * caller wrote or pointed at (docs/operating.md, Data minimisation): every
 * prompt, reference URL, reference name and uploaded image's storage key at
 * any depth becomes `[redacted]`, metadata and provider options become `{}`.
 * What the gateway decided from it stays (model, duration, ratio, audio,
 * count, size, format, the caller's reference id), so usage, losses and the
 * operator's view still add up.
 */
export const redactedRequest = (value: unknown): unknown => {
  if (Array.isArray(value)) return value.map(redactedRequest)
  if (value === null || typeof value !== "object") return value
  return Object.fromEntries(
    Object.entries(value as Record<string, unknown>).map(([key, member]) => [
      key,
      FREE_FORM.has(key)
        ? (member === null ? null : {})
        : WRITTEN.has(key) && typeof member === "string"
        ? REDACTED
        : redactedRequest(member)
    ])
  )
}

/**
 * A stored webhook event's payload (its JSON text, key order kept) with the
 * task object's metadata emptied; the text unchanged when there is none.
 */
export const redactedEventPayload = (payload: string): string => {
  const event = JSON.parse(payload) as { data?: { object?: Record<string, unknown> } }
  const object = event.data?.object
  if (object === undefined || object === null || typeof object.metadata !== "object" || object.metadata === null) {
    return payload
  }
  if (Object.keys(object.metadata).length === 0) return payload
  object.metadata = {}
  return JSON.stringify(event)
}
