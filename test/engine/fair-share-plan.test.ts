// Runs once: no database
import fc from "fast-check"
import { describe, expect, it } from "vitest"
import { type Lane, planClaims, type Shares } from "../../src/tasks/engine/FairShare.ts"

/**
 * The claim's plan (src/tasks/engine/FairShare.ts), on any lanes: it never
 * takes more than it may, leaves no slot free that an account could use, and
 * hands slots out by the least work in flight relative to weight.
 */

const GROUPS = ["a", "b", "c"] as const
const weights: Record<string, number> = { a: 1, b: 3, c: 0.5 }
const caps: Record<string, number | undefined> = { a: undefined, b: 5, c: 2 }
const shares = (by: Shares["by"]): Shares => ({ by, weightOf: (g) => weights[g]!, capOf: (g) => caps[g] })

const laneArb = fc.record({
  group: fc.constantFrom(...GROUPS),
  queued: fc.nat({ max: 20 }),
  inFlight: fc.nat({ max: 6 }),
  served: fc.double({ min: 0, max: 50, noNaN: true }),
  oldest: fc.nat({ max: 10_000 })
})
const lanesArb = fc.array(laneArb, { maxLength: 12 }).map((ls) =>
  ls.map((l, i): Lane => ({ ...l, account: `acct_${i}`, oldest: l.queued > 0 ? l.oldest : null }))
)

const open = (lane: Lane, given: number) =>
  given < lane.queued && (caps[lane.group] === undefined || lane.inFlight + given < caps[lane.group]!)

const givenOf = (plan: ReturnType<typeof planClaims>) => new Map(plan.map((p) => [p.account, p.n]))

describe("the claim's plan", () => {
  for (const by of ["account", "group"] as const) {
    it(`(${by}) takes no more than the slots, an account's queue or its group's cap, and leaves no usable slot`, () => {
      fc.assert(fc.property(lanesArb, fc.nat({ max: 40 }), (lanes, slots) => {
        const given = givenOf(planClaims(lanes, slots, shares(by)))
        let total = 0
        let usable = 0
        for (const lane of lanes) {
          const n = given.get(lane.account) ?? 0
          total += n
          expect(n).toBeLessThanOrEqual(lane.queued)
          // A lane already past its cap (the cap lowered since) is given nothing.
          if (caps[lane.group] !== undefined && n > 0) expect(lane.inFlight + n).toBeLessThanOrEqual(caps[lane.group]!)
          usable += Math.max(0, Math.min(lane.queued, (caps[lane.group] ?? Infinity) - lane.inFlight))
        }
        expect(total).toBe(Math.min(slots, usable))
      }))
    })
  }

  it("(account) gives each slot to the least loaded account relative to its weight", () => {
    fc.assert(fc.property(lanesArb, fc.nat({ max: 40 }), (lanes, slots) => {
      const given = givenOf(planClaims(lanes, slots, shares("account")))
      const loadOf = (lane: Lane, extra: number) =>
        (lane.inFlight + (given.get(lane.account) ?? 0) + extra) / weights[lane.group]!
      // Water-filling: an account given a slot was, before its last one, no more loaded than any account left open.
      for (const winner of lanes.filter((l) => (given.get(l.account) ?? 0) > 0)) {
        for (const other of lanes.filter((l) => open(l, given.get(l.account) ?? 0))) {
          expect(loadOf(winner, -1)).toBeLessThanOrEqual(loadOf(other, 0) + 1e-9)
        }
      }
    }))
  })

  it("(group) gives each slot to the least loaded group relative to its weight", () => {
    fc.assert(fc.property(lanesArb, fc.nat({ max: 40 }), (lanes, slots) => {
      const given = givenOf(planClaims(lanes, slots, shares("group")))
      const load = (group: string, extra: number) =>
        (lanes.filter((l) => l.group === group).reduce((n, l) => n + l.inFlight + (given.get(l.account) ?? 0), 0) +
          extra) / weights[group]!
      const gotSome = GROUPS.filter((g) => lanes.some((l) => l.group === g && (given.get(l.account) ?? 0) > 0))
      const leftOpen = GROUPS.filter((g) => lanes.some((l) => l.group === g && open(l, given.get(l.account) ?? 0)))
      for (const winner of gotSome) {
        for (const other of leftOpen) expect(load(winner, -1)).toBeLessThanOrEqual(load(other, 0) + 1e-9)
      }
    }))
  })

  it("one account's long queue holds a newcomer for no slot once one frees", () => {
    const lanes: Array<Lane> = [
      { account: "A", group: "a", queued: 198, inFlight: 1, served: 40, oldest: 1 },
      { account: "B", group: "a", queued: 2, inFlight: 0, served: 0, oldest: 500 }
    ]
    expect(planClaims(lanes, 1, shares("account"))).toEqual([{ account: "B", n: 1 }])
  })

  it("one slot that frees again and again is handed round between equally loaded accounts", () => {
    // A channel of concurrency 1: every task ends before the next claim, so every claim is a tie of loads.
    const served: Record<string, number> = { A: 0, B: 0 }
    const order: Array<string> = []
    for (let i = 0; i < 10; i++) {
      const lanes: Array<Lane> = ["A", "B"].map((account, k) => ({
        account,
        group: "a",
        queued: 100,
        inFlight: 0,
        served: served[account]!,
        // A's tasks are all older than B's: age alone would keep the slot with A.
        oldest: k * 1000 + i
      }))
      const { account } = planClaims(lanes, 1, shares("account"))[0]!
      served[account]! += 1
      order.push(account)
    }
    expect(order).toEqual(["A", "B", "A", "B", "A", "B", "A", "B", "A", "B"])
  })
})
