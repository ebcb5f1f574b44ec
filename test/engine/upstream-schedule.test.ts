import { SqlClient } from "@effect/sql"
import { Effect, Layer, Redacted } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  currentFactor,
  DECREASE,
  FLOOR,
  HEADROOM,
  reserveIn,
  type Schedule,
  schedulesOf
} from "../../src/channel/Pacing.ts"
import { budgetFactors } from "../../src/channel/sql/budgetFactors.ts"
import { ensureSchedules } from "../../src/channel/sql/ensureSchedules.ts"
import { lowerRate } from "../../src/channel/sql/lowerRate.ts"
import { reserveSlot } from "../../src/channel/sql/reserveSlot.ts"
import { migrate, PostgresClient } from "../../src/platform/Database.ts"
import { PostgresClientLive } from "../../src/runtime/node/PostgresClient.ts"
import { type Backend, backends, createDatabase } from "../support/database.ts"
import { pgliteLayer } from "../support/pglite.ts"

/**
 * The shared schedule of a channel's request budget in the database
 * (src/channel/sql/, migration 22), on each backend: one statement reserves
 * a slot as the reference (Pacing.ts `reserveIn`) says, on the database's
 * clock; many reservations at once never share a slot; a throttling answer
 * lowers the rate once per round and holds every schedule past its
 * Retry-After.
 */

const BUDGET = { perSecond: 20, createShare: 0.2, byOperation: { poll: 10 } }
/** The rates the statement is given: each schedule's, with the headroom (as UpstreamBudget.ts passes them). */
const spaced = (schedules: ReadonlyArray<Schedule>) =>
  schedules.map((s) => ({ name: s.name, perSecond: s.perSecond * HEADROOM }))
const NAMES = ["all", "reads", "poll"]

describe.each(backends)("the budget's schedule in the database (%s)", (backend: Backend) => {
  let db: Awaited<ReturnType<typeof createDatabase>>
  beforeAll(async () => {
    db = await createDatabase(backend)
  })
  afterAll(() => db?.drop())

  const layer = () =>
    db.url === undefined
      ? pgliteLayer()
      : Layer.unwrapEffect(Effect.map(PostgresClient, (port) => port.layer(Redacted.make(db.url!)))).pipe(
        Layer.provide(PostgresClientLive)
      )
  const run = <A, E>(effect: Effect.Effect<A, E, SqlClient.SqlClient>) =>
    Effect.runPromise(Effect.provide(Effect.zipRight(migrate, effect), layer()))

  it("reserves slots as the reference does: the latest next free slot or now, each schedule moving on by its spacing", async () => {
    const reservations = await run(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      // No rows yet: nothing is reserved (the budget makes them on its first use).
      const none = yield* reserveSlot(sql, "ch-a", spaced(schedulesOf(BUDGET, "submit")))
      yield* ensureSchedules(sql, "ch-a", NAMES)
      yield* ensureSchedules(sql, "ch-a", NAMES)
      const made = []
      for (const operation of ["submit", "poll", "poll", "submit", "find", "submit"] as const) {
        const schedules = schedulesOf(BUDGET, operation)
        made.push({ schedules, reserved: yield* reserveSlot(sql, "ch-a", spaced(schedules)) })
      }
      return { none, made }
    }))
    expect(reservations.none).toBeUndefined()
    let nextAt: ReadonlyMap<string, number> = new Map(NAMES.map((name) => [name, 0]))
    for (const { reserved, schedules } of reservations.made) {
      // The statement's own clock reading is the reference's now.
      const expected = reserveIn(nextAt, schedules, reserved!.now, 1)
      expect(reserved!.factor).toBe(1)
      expect(reserved!.slotAt).toBeCloseTo(expected.slot, 2)
      nextAt = expected.nextAt
    }
    const slots = reservations.made.map((m) => m.reserved!.slotAt)
    // The second poll waits for the poll's own rate (10 a second, with the headroom), the submit after it only for
    // the total's spacing.
    expect(slots[2]! - slots[1]!).toBeCloseTo(1000 / (10 * HEADROOM), 2)
    expect(slots[3]! - slots[2]!).toBeCloseTo(1000 / (20 * HEADROOM), 2)
  })

  it("many reservations at once each get their own slot, spaced at least by the total's spacing", async () => {
    const slots = await run(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* ensureSchedules(sql, "ch-b", NAMES)
      return yield* Effect.all(
        Array.from(
          { length: 60 },
          (_, i) => reserveSlot(sql, "ch-b", spaced(schedulesOf(BUDGET, i % 3 === 0 ? "poll" : "submit")))
        ),
        { concurrency: 12 }
      )
    }))
    const sorted = slots.map((r) => r!.slotAt).sort((a, b) => a - b)
    for (let i = 1; i < sorted.length; i++) {
      expect(sorted[i]! - sorted[i - 1]!).toBeGreaterThanOrEqual(1000 / (20 * HEADROOM) - 0.01)
    }
  })

  it("a throttling answer halves the rate once per round, never below the floor, and holds the schedule past its Retry-After", async () => {
    const seen = await run(Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      yield* ensureSchedules(sql, "ch-c", NAMES)
      const first = (yield* reserveSlot(sql, "ch-c", spaced(schedulesOf(BUDGET, "submit"))))!
      const second = (yield* reserveSlot(sql, "ch-c", spaced(schedulesOf(BUDGET, "submit"))))!
      // Both were reserved before the 429 to the first came back.
      const lowered = (yield* lowerRate(sql, "ch-c", first.now, 3000))[0]!
      const again = (yield* lowerRate(sql, "ch-c", second.now, 3000))[0]!
      const factors = yield* budgetFactors(sql)
      // Paced at the lowered rate and throttled again: lowered again.
      const third = (yield* reserveSlot(sql, "ch-c", spaced(schedulesOf(BUDGET, "poll"))))!
      const twice = (yield* lowerRate(sql, "ch-c", third.now, 0))[0]!
      for (let i = 0; i < 10; i++) {
        const next = (yield* reserveSlot(sql, "ch-c", spaced(schedulesOf(BUDGET, "submit"))))!
        yield* lowerRate(sql, "ch-c", next.now, 0)
      }
      const floor = (yield* budgetFactors(sql)).get("ch-c")!
      return { first, lowered, again, factors, third, twice, floor }
    }))
    expect(seen.lowered).toMatchObject({ lowered: true })
    expect(Number(seen.lowered.factor)).toBeCloseTo(DECREASE, 3)
    expect(seen.again).toMatchObject({ lowered: false })
    expect(seen.factors.get("ch-c")!).toBeCloseTo(DECREASE, 2)
    expect(seen.factors.get("ch-never-paced")).toBeUndefined()
    // The next slot after the lowering waits out the Retry-After, and is spaced at the lowered rate after that.
    expect(seen.third.slotAt - seen.first.now).toBeGreaterThanOrEqual(3000)
    expect(seen.third.factor).toBeCloseTo(DECREASE, 2)
    expect(seen.twice).toMatchObject({ lowered: true })
    expect(Number(seen.twice.factor)).toBeCloseTo(DECREASE * DECREASE, 2)
    // Climbing back meanwhile by no more than a few milliseconds' worth.
    expect(seen.floor).toBeGreaterThanOrEqual(FLOOR)
    expect(seen.floor).toBeLessThan(currentFactor(FLOOR, 0, 1000))
  })
})
