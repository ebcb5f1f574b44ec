import { Effect, TestClock, TestContext } from "effect"

/**
 * Runs `effect` as if `ms` had passed: Effect's `TestClock`, set that far
 * ahead of the wall clock, is the only clock the effect reads. The engine
 * takes every timestamp (claims, leases, the reaper's "now") from Effect's
 * Clock, so a test expires a lease without sleeping, whatever the load.
 */
export const after = (ms: number) => <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E, R> =>
  Effect.zipRight(TestClock.setTime(Date.now() + ms), effect).pipe(Effect.provide(TestContext.TestContext))
