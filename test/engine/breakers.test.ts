// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import { describe, expect, it } from "@effect/vitest"
import { Effect, TestClock } from "effect"
import { Breakers } from "../../src/tasks/engine/Breakers.ts"

/**
 * The per-channel circuit breaker on the test clock: open for exactly its
 * cool-down after a trip, per channel, and a cool-down of 0 never opens it.
 */
describe("the channel breakers", () => {
  it.effect("a tripped channel is open until its cool-down has passed, then closed; other channels are not", () =>
    Effect.gen(function*() {
      const breakers = yield* Breakers
      expect(yield* breakers.isOpen("ark")).toBe(false)
      yield* breakers.trip("ark", 60_000)
      expect(yield* breakers.isOpen("ark")).toBe(true)
      expect(yield* breakers.isOpen("kling")).toBe(false)
      yield* TestClock.adjust("59999 millis")
      expect(yield* breakers.isOpen("ark")).toBe(true)
      yield* TestClock.adjust("1 millis")
      expect(yield* breakers.isOpen("ark")).toBe(false)
    }).pipe(Effect.provide(Breakers.layer)))

  it.effect("a second trip while open starts the cool-down again; a cool-down of 0 never opens", () =>
    Effect.gen(function*() {
      const breakers = yield* Breakers
      yield* breakers.trip("ark", 10_000)
      yield* TestClock.adjust("8 seconds")
      yield* breakers.trip("ark", 10_000)
      yield* TestClock.adjust("8 seconds")
      expect(yield* breakers.isOpen("ark")).toBe(true)
      yield* TestClock.adjust("2 seconds")
      expect(yield* breakers.isOpen("ark")).toBe(false)
      yield* breakers.trip("sora", 0)
      expect(yield* breakers.isOpen("sora")).toBe(false)
    }).pipe(Effect.provide(Breakers.layer)))
})
