// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import { describe, expect, it } from "vitest"
import { MAX_RETRY_HINT_MS, retryHintMs } from "../../src/channel/contract/RetryHint.ts"

/**
 * The three ways upstreams say "call again later" (`retry-after-ms`,
 * `Retry-After`, Google's `RetryInfo.retryDelay`; docs/adapters/README.md, What
 * every upstream adapter shares), read into one delay.
 */
describe("retry hints", () => {
  const now = Date.parse("2026-11-23T12:00:00Z")

  it("reads retry-after-ms first, then Retry-After seconds or date, then Google's RetryInfo", () => {
    expect(retryHintMs({ "retry-after-ms": "1500", "retry-after": "9" }, undefined, now)).toBe(1500)
    expect(retryHintMs({ "retry-after": "7" }, undefined, now)).toBe(7000)
    expect(retryHintMs({ "retry-after": "Mon, 23 Nov 2026 12:00:30 GMT" }, undefined, now)).toBe(30_000)
    // A date already past means "now".
    expect(retryHintMs({ "retry-after": "Mon, 23 Nov 2026 11:00:00 GMT" }, undefined, now)).toBe(0)
    const google = {
      error: {
        code: 429,
        status: "RESOURCE_EXHAUSTED",
        details: [
          { "@type": "type.googleapis.com/google.rpc.QuotaFailure", violations: [] },
          { "@type": "type.googleapis.com/google.rpc.RetryInfo", retryDelay: "12.5s" }
        ]
      }
    }
    expect(retryHintMs({}, google, now)).toBe(12_500)
  })

  it("ignores what it cannot read and caps what would park a task for days", () => {
    expect(retryHintMs({ "retry-after": "soon" }, undefined, now)).toBeUndefined()
    expect(retryHintMs({ "retry-after-ms": "-5" }, undefined, now)).toBeUndefined()
    expect(retryHintMs({}, { error: { details: [{ "@type": "x.RetryInfo", retryDelay: "forever" }] } }, now))
      .toBeUndefined()
    expect(retryHintMs({}, "<html>503</html>", now)).toBeUndefined()
    expect(retryHintMs({ "retry-after": "999999" }, undefined, now)).toBe(MAX_RETRY_HINT_MS)
  })
})
