// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import { describe, expect, it } from "@effect/vitest"
import { Effect, Fiber, Schema, TestClock } from "effect"
import { GenerationError } from "../../src/channel/contract/Generation.ts"
import { EngineSettings } from "../../src/platform/Settings.ts"
import { MAX_POLL_GAP_MS, nextPollDelay } from "../../src/tasks/engine/PollTask.ts"
import { generationRetries } from "../../src/tasks/engine/SubmitUpstream.ts"

/**
 * The engine's two backoffs on the test clock: a transient submit failure
 * is retried on an exponential schedule that never comes sooner than the
 * upstream's Retry-After, and stops after `generate_retries`; a waiting
 * task's polls double from the poll interval up to a cap, never sooner
 * than a hint. No wall clock: the clock only moves when the test moves it.
 */

const engine = Schema.decodeSync(EngineSettings)({ retry_base_ms: 100, generate_retries: 3 })

const transient = (retryAfterMs?: number) =>
  new GenerationError({ code: "busy", message: "busy", retryable: true, transient: true, retryAfterMs })

/** A submit that fails with `errors` in turn, then succeeds; counts its tries. */
const flakySubmit = (errors: ReadonlyArray<GenerationError>) => {
  let tries = 0
  const submit = Effect.suspend(() => {
    const error = errors[tries++]
    return error === undefined ? Effect.succeed("accepted") : Effect.fail(error)
  })
  return { submit, tries: () => tries }
}

describe("the submit retries", () => {
  it.effect("back off exponentially from the base delay", () =>
    Effect.gen(function*() {
      const flaky = flakySubmit([transient(), transient(), transient()])
      const fiber = yield* Effect.fork(Effect.retry(flaky.submit, generationRetries(engine)))
      yield* TestClock.adjust("0 millis")
      expect(flaky.tries()).toBe(1)
      yield* TestClock.adjust("99 millis")
      expect(flaky.tries()).toBe(1)
      yield* TestClock.adjust("1 millis")
      expect(flaky.tries()).toBe(2)
      yield* TestClock.adjust("199 millis")
      expect(flaky.tries()).toBe(2)
      yield* TestClock.adjust("1 millis")
      expect(flaky.tries()).toBe(3)
      yield* TestClock.adjust("400 millis")
      expect(flaky.tries()).toBe(4)
      expect(yield* Fiber.join(fiber)).toBe("accepted")
    }))

  it.effect("never come sooner than the upstream's Retry-After, and never later than the backoff", () =>
    Effect.gen(function*() {
      const flaky = flakySubmit([transient(1500), transient(10)])
      const fiber = yield* Effect.fork(Effect.retry(flaky.submit, generationRetries(engine)))
      yield* TestClock.adjust("1499 millis")
      expect(flaky.tries()).toBe(1)
      yield* TestClock.adjust("1 millis")
      expect(flaky.tries()).toBe(2)
      // A hint shorter than the backoff does not shorten it.
      yield* TestClock.adjust("199 millis")
      expect(flaky.tries()).toBe(2)
      yield* TestClock.adjust("1 millis")
      expect(flaky.tries()).toBe(3)
      expect(yield* Fiber.join(fiber)).toBe("accepted")
    }))

  it.effect("stop after generate_retries with the last failure", () =>
    Effect.gen(function*() {
      const flaky = flakySubmit(Array.from({ length: 10 }, () => transient()))
      const fiber = yield* Effect.fork(Effect.either(Effect.retry(flaky.submit, generationRetries(engine))))
      yield* TestClock.adjust("1 minute")
      const outcome = yield* Fiber.join(fiber)
      expect(outcome._tag).toBe("Left")
      expect(flaky.tries()).toBe(1 + engine.generate_retries)
    }))
})

describe("the poll backoff", () => {
  it("doubles from the poll interval per poll already made, up to the cap", () => {
    expect([0, 1, 2, 3, 4].map((polls) => nextPollDelay(200, polls, undefined, 2_000))).toEqual([
      200,
      400,
      800,
      1600,
      2000
    ])
    // The exponent stops growing, so a task polled for days does not overflow to Infinity.
    expect(nextPollDelay(1000, 10_000)).toBe(MAX_POLL_GAP_MS)
  })

  it("waits at least as long as the upstream asked, even past the cap", () => {
    expect(nextPollDelay(200, 0, 1500, 2_000)).toBe(1500)
    expect(nextPollDelay(200, 5, 60_000, 2_000)).toBe(60_000)
    expect(nextPollDelay(200, 3, 10, 2_000)).toBe(1600)
  })
})
