// Runs once: no database
import { Effect, Fiber, Option, Ref } from "effect"
import { describe, expect, it } from "vitest"
import { makeFifoPermits } from "../../src/platform/FifoPermits.ts"

/**
 * The permits an upstream's request budget hands to the requests waiting for
 * a slot (src/platform/FifoPermits.ts): first come, first served, each given
 * back permit taken by exactly the next waiter, with thousands waiting.
 */
describe("FIFO permits", () => {
  it("serve thousands of waiters in the order they came, never more at once than the permits", async () => {
    const program = Effect.gen(function*() {
      const permits = yield* makeFifoPermits(3)
      const held = yield* Ref.make(0)
      const most = yield* Ref.make(0)
      const order: Array<number> = []
      const fibers: Array<Fiber.RuntimeFiber<void>> = []
      for (let i = 0; i < 5_000; i++) {
        fibers.push(
          yield* permits.withPermit(Effect.gen(function*() {
            const now = yield* Ref.updateAndGet(held, (n) => n + 1)
            yield* Ref.update(most, (m) => Math.max(m, now))
            order.push(i)
            yield* Effect.yieldNow()
            yield* Ref.update(held, (n) => n - 1)
          })).pipe(Effect.fork)
        )
        // Each waiter is queued before the next one comes.
        yield* Effect.yieldNow()
      }
      yield* Fiber.joinAll(fibers)
      return { order, most: yield* Ref.get(most) }
    })
    const { most, order } = await Effect.runPromise(program)
    expect(order).toHaveLength(5_000)
    expect(order).toEqual([...order].sort((a, b) => a - b))
    expect(most).toBeLessThanOrEqual(3)
  })

  it("give a permit back when the holder fails or is interrupted", async () => {
    const program = Effect.gen(function*() {
      const permits = yield* makeFifoPermits(1)
      yield* Effect.either(permits.withPermit(Effect.fail("boom")))
      const blocked = yield* permits.withPermit(Effect.never).pipe(Effect.fork)
      yield* Effect.yieldNow()
      yield* Fiber.interrupt(blocked)
      return yield* permits.withPermit(Effect.succeed("taken"))
    })
    expect(await Effect.runPromise(program)).toBe("taken")
  })
})

describe("FIFO permits, a waiter stopped", () => {
  it("is interrupted at once, runs nothing, and the permits it never held stay whole", async () => {
    const program = Effect.gen(function*() {
      const permits = yield* makeFifoPermits(1)
      const ran = yield* Ref.make(0)
      const holder = yield* permits.withPermit(Effect.never).pipe(Effect.fork)
      yield* Effect.yieldNow()
      const waiter = yield* permits.withPermit(Ref.update(ran, (n) => n + 1)).pipe(Effect.fork)
      yield* Effect.yieldNow()
      // The waiter's interruption does not wait for the holder's permit.
      const interrupted = yield* Fiber.interrupt(waiter).pipe(Effect.timeoutOption("1 second"))
      yield* Fiber.interrupt(holder)
      const after = yield* permits.withPermit(Effect.succeed("taken")).pipe(Effect.timeoutOption("1 second"))
      return { interrupted: interrupted._tag, ran: yield* Ref.get(ran), after: Option.getOrNull(after) }
    })
    const result = await Effect.runPromise(program)
    expect(result.interrupted).toBe("Some")
    expect(result.ran).toBe(0)
    expect(result.after).toBe("taken")
  })
})
