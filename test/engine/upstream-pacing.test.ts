// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { GenerationError } from "../../src/channel/contract/Generation.ts"
import { makeDatabaseClock } from "../../src/channel/DatabaseClock.ts"
import { isThrottling } from "../../src/channel/MeteredRunner.ts"
import {
  type Budget,
  budgetPollGapMs,
  currentFactor,
  DECREASE,
  FLOOR,
  HEADROOM,
  latenessAllowedMs,
  loweredFactor,
  type Operation,
  operationRate,
  pollClaimLimit,
  RECOVERY_PER_S,
  reserveIn,
  schedulesOf
} from "../../src/channel/Pacing.ts"
import { MAX_POLL_GAP_MS, nextPollDelay } from "../../src/tasks/engine/PollTask.ts"

/**
 * The arithmetic of a channel's upstream request budget (docs/engine.md, The
 * upstream request budget; src/channel/Pacing.ts): the schedules a request
 * takes its slot in, the slots they hand out, the rate a 429 lowers and that
 * climbs back, how far a paced poller stretches the gap between polls and how
 * many tasks it takes at once, and the database's clock read on a process's
 * own. The statements that apply it in the database are held to the same
 * reference by upstream-schedule.test.ts.
 */

const OPERATIONS: ReadonlyArray<Operation> = ["submit", "poll", "find", "cancel", "delete", "check"]

const budgetArb: fc.Arbitrary<Budget> = fc
  .record({
    perSecond: fc.double({ min: 0.1, max: 500, noNaN: true }),
    createShare: fc.constantFrom(0, 0.1, 0.2, 0.5, 0.9),
    shares: fc.record({
      submit: fc.option(fc.double({ min: 0.01, max: 1, noNaN: true }), { nil: undefined }),
      poll: fc.option(fc.double({ min: 0.01, max: 1, noNaN: true }), { nil: undefined }),
      find: fc.option(fc.double({ min: 0.01, max: 1, noNaN: true }), { nil: undefined }),
      cancel: fc.option(fc.double({ min: 0.01, max: 1, noNaN: true }), { nil: undefined })
    })
  })
  .map(({ createShare, perSecond, shares }) => ({
    perSecond,
    createShare,
    byOperation: Object.fromEntries(
      Object.entries(shares).filter(([, s]) => s !== undefined).map(([op, s]) => [op, s! * perSecond])
    )
  }))

/** Requests of a channel as a workload: each wants to go at `at` (ms), and takes the first slot it is given. */
const workloadArb = fc.array(
  fc.record({ operation: fc.constantFrom(...OPERATIONS), at: fc.integer({ min: 0, max: 10_000 }) }),
  { minLength: 1, maxLength: 300 }
).map((requests) => [...requests].sort((a, b) => a.at - b.at))

/** The most of these times within any window of `ms` (sliding). */
const busiest = (times: ReadonlyArray<number>, ms: number) => {
  const sorted = [...times].sort((a, b) => a - b)
  let best = 0
  for (let start = 0, end = 0; end < sorted.length; end++) {
    while (sorted[end]! - sorted[start]! >= ms) start++
    best = Math.max(best, end - start + 1)
  }
  return best
}

/** The slots a workload gets at a fixed rate factor, by operation. */
const slotsOf = (budget: Budget, requests: ReadonlyArray<{ operation: Operation; at: number }>, factor = 1) => {
  let nextAt: ReadonlyMap<string, number> = new Map()
  return requests.map(({ at, operation }) => {
    const reserved = reserveIn(nextAt, schedulesOf(budget, operation), at, factor)
    nextAt = reserved.nextAt
    return { operation, slot: reserved.slot }
  })
}

/** What one second may hold at this rate: every slot spaced, plus the one at the window's edge. */
const allowed = (perSecond: number) => perSecond * HEADROOM + 1 + 1e-9

describe("the schedules of a request", () => {
  it("every request takes a slot in the total; reads share what creates leave; an operation's own rate applies", () => {
    fc.assert(fc.property(budgetArb, fc.constantFrom(...OPERATIONS), (budget, operation) => {
      const schedules = schedulesOf(budget, operation)
      expect(schedules[0]).toEqual({ name: "all", perSecond: budget.perSecond })
      const reads = schedules.find((s) => s.name === "reads")
      if (operation === "submit" || budget.createShare === 0) expect(reads).toBeUndefined()
      else expect(reads?.perSecond).toBeCloseTo(budget.perSecond * (1 - budget.createShare))
      const own = operation === "check" || operation === "delete" ? undefined : budget.byOperation[operation]
      expect(schedules.find((s) => s.name === operation)?.perSecond).toBe(own)
      expect(operationRate(budget, operation)).toBe(Math.min(...schedules.map((s) => s.perSecond)))
    }))
  })
})

describe("the slots a schedule hands out", () => {
  it("never more than the budget in any second, reads never more than their share, each operation within its own", () => {
    fc.assert(fc.property(budgetArb, workloadArb, (budget, requests) => {
      const slots = slotsOf(budget, requests)
      expect(busiest(slots.map((s) => s.slot), 1000)).toBeLessThanOrEqual(allowed(budget.perSecond))
      const reads = slots.filter((s) => s.operation !== "submit").map((s) => s.slot)
      if (budget.createShare > 0) {
        expect(busiest(reads, 1000)).toBeLessThanOrEqual(allowed(budget.perSecond * (1 - budget.createShare)))
      }
      for (const [operation, perSecond] of Object.entries(budget.byOperation)) {
        const own = slots.filter((s) => s.operation === operation).map((s) => s.slot)
        expect(busiest(own, 1000)).toBeLessThanOrEqual(allowed(perSecond!))
      }
      // A request never goes before it asked, and slots are handed out in order.
      slots.forEach((s, i) => expect(s.slot).toBeGreaterThanOrEqual(requests[i]!.at))
    }))
  })

  it("a lower rate factor spaces the slots wider, in proportion", () => {
    fc.assert(fc.property(budgetArb, fc.double({ min: FLOOR, max: 1, noNaN: true }), (budget, factor) => {
      const requests = Array.from({ length: 50 }, () => ({ operation: "submit" as const, at: 0 }))
      const slots = slotsOf(budget, requests, factor).map((s) => s.slot)
      const spacing = 1000 / (operationRate(budget, "submit") * HEADROOM * factor)
      for (let i = 1; i < slots.length; i++) expect(slots[i]! - slots[i - 1]!).toBeCloseTo(spacing, 6)
    }))
  })
})

describe("the rate after throttling (AIMD)", () => {
  it("climbs back by RECOVERY_PER_S of the budget a second, up to the whole of it", () => {
    fc.assert(fc.property(
      fc.double({ min: FLOOR, max: 1, noNaN: true }),
      fc.integer({ min: 0, max: 120_000 }),
      fc.integer({ min: 0, max: 120_000 }),
      (factor, a, b) => {
        const [early, late] = a <= b ? [a, b] : [b, a]
        const at = (t: number) => currentFactor(factor, 0, t)
        expect(at(early)).toBeLessThanOrEqual(at(late))
        expect(at(late)).toBeLessThanOrEqual(1)
        expect(at(early)).toBeCloseTo(Math.min(1, factor + RECOVERY_PER_S * early / 1000), 9)
      }
    ))
    // A halving is made up in 25 s.
    expect(currentFactor(0.5, 1000, 26_000)).toBe(1)
  })

  it("a 429 halves it, never below the floor; a burst of 429s to requests paced before the lowering halves it once", () => {
    fc.assert(fc.property(
      fc.double({ min: FLOOR, max: 1, noNaN: true }),
      fc.array(fc.integer({ min: 0, max: 4999 }), { minLength: 1, maxLength: 20 }),
      (start, reservedAt) => {
        // The answers arrive after the first lowering, which happened at t = 5000: every one of these requests had
        // its slot reserved before it.
        const lowered = loweredFactor(start, 5000, 0)
        expect(lowered).toBeCloseTo(Math.max(FLOOR, start * DECREASE), 12)
        const after = reservedAt.reduce((factor, at) => loweredFactor(factor, at, 5000), lowered)
        expect(after).toBe(lowered)
        // A request paced at the lowered rate that is throttled again lowers it again.
        expect(loweredFactor(lowered, 6000, 5000)).toBeCloseTo(Math.max(FLOOR, lowered * DECREASE), 12)
      }
    ))
  })

  it("throttling is what the adapter says, else a 429 or a Retry-After", () => {
    const error = (more: Partial<ConstructorParameters<typeof GenerationError>[0]>) =>
      new GenerationError({ code: "video_task_failed", message: "x", retryable: true, transient: true, ...more })
    expect(isThrottling(error({ upstream: { status: 429 } }))).toBe(true)
    expect(isThrottling(error({ retryAfterMs: 2000 }))).toBe(true)
    expect(isThrottling(error({ upstream: { status: 503 } }))).toBe(false)
    // Kling's concurrency cap comes as a 429 with our own backoff: not a request rate.
    expect(isThrottling(error({ upstream: { status: 429 }, retryAfterMs: 5000, throttled: false }))).toBe(false)
    expect(isThrottling(error({ throttled: true }))).toBe(true)
  })
})

describe("a paced poller", () => {
  it("stretches the gap so that polling every waiting task once stays within its rate", () => {
    fc.assert(fc.property(
      fc.integer({ min: 0, max: 200_000 }),
      fc.double({ min: 0.1, max: 500, noNaN: true }),
      fc.constantFrom(1, 20, 100),
      (waiting, perSecond, batch) => {
        const gapMs = budgetPollGapMs(waiting, perSecond, batch)
        // In whole milliseconds: the engine's times are (its columns are integers).
        expect(Number.isInteger(gapMs)).toBe(true)
        if (waiting === 0) {
          expect(gapMs).toBe(0)
          return
        }
        // The requests one round of every waiting task costs, spread over the gap, are the rate at most.
        expect(Math.ceil(waiting / batch) / (gapMs / 1000)).toBeLessThanOrEqual(perSecond * (1 + 1e-9))
      }
    ))
    // 100,000 waiting on single-task polls at 16 a second: each task asked every 104 min, not hundreds a second sent.
    expect(budgetPollGapMs(100_000, 16, 1)).toBe(6_250_000)
  })

  it("never polls sooner than the adapter's own cadence, nor than the budget's gap", () => {
    fc.assert(fc.property(
      fc.integer({ min: 50, max: 5000 }),
      fc.integer({ min: 0, max: 30 }),
      fc.option(fc.integer({ min: 0, max: 600_000 }), { nil: undefined }),
      fc.integer({ min: 0, max: 10_000_000 }),
      (intervalMs, polls, hintMs, floorMs) => {
        const delay = nextPollDelay(intervalMs, polls, hintMs, MAX_POLL_GAP_MS, floorMs)
        expect(delay).toBeGreaterThanOrEqual(nextPollDelay(intervalMs, polls, hintMs))
        expect(delay).toBeGreaterThanOrEqual(floorMs)
      }
    ))
  })

  it("takes no more due tasks than it can poll before their hold runs out", () => {
    fc.assert(fc.property(
      fc.double({ min: 0.1, max: 500, noNaN: true }),
      fc.constantFrom(1, 20, 100),
      fc.integer({ min: 1000, max: 120_000 }),
      (perSecond, batch, windowMs) => {
        const limit = pollClaimLimit(perSecond, batch, windowMs, 500)
        expect(limit).toBeLessThanOrEqual(Math.max(500, batch))
        expect(limit).toBeGreaterThanOrEqual(Math.min(batch, 500))
        // Beyond the one request it always may send, the requests it takes fit in the window at its rate.
        if (limit > batch) expect(Math.ceil(limit / batch) / perSecond * 1000).toBeLessThanOrEqual(windowMs)
      }
    ))
  })
})

describe("the database's clock on a process's own", () => {
  it("a slot is never early, and late by no more than the quickest round trip seen", () => {
    fc.assert(fc.property(
      fc.integer({ min: -3_600_000, max: 3_600_000 }),
      fc.array(fc.record({ sentAt: fc.integer({ min: 0, max: 20_000 }), rtt: fc.integer({ min: 0, max: 200 }) }), {
        minLength: 1,
        maxLength: 50
      }),
      fc.double({ min: 0, max: 1, noNaN: true }),
      (offset, exchanges, where) => {
        // offset: the database's clock minus the process's. The statement reads the database's clock somewhere
        // within the round trip (`where`), and the answer arrives at its end.
        const clock = makeDatabaseClock()
        const sorted = [...exchanges].sort((a, b) => a.sentAt - b.sentAt)
        for (const { rtt, sentAt } of sorted) clock.sample(sentAt + rtt * where + offset, sentAt + rtt)
        const slot = 50_000 + offset
        const trueLocal = slot - offset
        const local = clock.toLocal(slot)
        expect(local).toBeGreaterThanOrEqual(trueLocal - 1e-6)
        expect(local - trueLocal).toBeLessThanOrEqual(Math.min(...sorted.map((e) => e.rtt)) + 1e-6)
      }
    ))
  })

  it("a slot missed by more than a quarter of its spacing is given up", () => {
    expect(latenessAllowedMs(20)).toBe(12.5)
    expect(latenessAllowedMs(0.5)).toBe(250)
  })
})
