import { Clock, Context, Effect, Layer } from "effect"
import { AppConfig } from "../platform/AppConfig.ts"
import type { RateClass } from "../platform/Settings.ts"
import { RateLimited } from "./Errors.ts"

interface Bucket {
  tokens: number
  updatedMs: number
}

/**
 * Token buckets per key and endpoint class, counted in this replica's memory
 * (docs/api.md, Rate limits): with N replicas a key may reach N times the
 * configured rate.
 */
export class RateLimit extends Context.Tag("RateLimit")<RateLimit, {
  readonly take: (keyId: string, rateClass: RateClass) => Effect.Effect<void, RateLimited>
  /** `take` at a given time, without an effect: 0 when a token was taken, else the seconds to wait (none taken). */
  readonly takeAt: (keyId: string, rateClass: RateClass, nowMs: number) => number
}>() {
  static readonly layer = Layer.effect(
    RateLimit,
    Effect.gen(function*() {
      const { limits } = yield* AppConfig
      const buckets = new Map<string, Bucket>()
      // Forget buckets that have refilled completely, so idle keys cost no memory.
      const sweep = (nowMs: number) => {
        for (const [id, bucket] of buckets) {
          const rate = limits.rate_limits[id.slice(0, id.indexOf(":")) as RateClass]
          if (bucket.tokens + ((nowMs - bucket.updatedMs) / 1000) * rate.per_second >= rate.burst) buckets.delete(id)
        }
      }
      let lastSweepMs = 0
      /** Takes a token at `nowMs`; answers 0 when one was taken, else the seconds until one will be there. */
      const takeAt = (keyId: string, rateClass: RateClass, nowMs: number): number => {
        const { per_second, burst } = limits.rate_limits[rateClass]
        if (nowMs - lastSweepMs > 60_000) {
          lastSweepMs = nowMs
          sweep(nowMs)
        }
        const id = `${rateClass}:${keyId}`
        const bucket = buckets.get(id) ?? { tokens: burst, updatedMs: nowMs }
        bucket.tokens = Math.min(burst, bucket.tokens + ((nowMs - bucket.updatedMs) / 1000) * per_second)
        bucket.updatedMs = nowMs
        buckets.set(id, bucket)
        if (bucket.tokens >= 1) {
          bucket.tokens -= 1
          return 0
        }
        return Math.max(1, Math.ceil((1 - bucket.tokens) / per_second))
      }
      return {
        take: (keyId, rateClass) =>
          Effect.flatMap(Clock.currentTimeMillis, (nowMs) => {
            const retryAfter = takeAt(keyId, rateClass, nowMs)
            return retryAfter === 0 ? Effect.void : Effect.fail(RateLimited.after(retryAfter))
          }),
        takeAt
      }
    })
  )
}
