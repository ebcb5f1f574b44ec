import type { SqlClient } from "@effect/sql"
import { Clock, Data, Duration, Effect, Schedule } from "effect"
import { makeFifoPermits } from "../platform/FifoPermits.ts"
import { makeDatabaseClock } from "./DatabaseClock.ts"
import {
  type Budget,
  HEADROOM,
  latenessAllowedMs,
  openReservations,
  type Operation,
  operationRate,
  schedulesOf
} from "./Pacing.ts"
import { budgetFactors } from "./sql/budgetFactors.ts"
import { ensureSchedules } from "./sql/ensureSchedules.ts"
import { lowerRate } from "./sql/lowerRate.ts"
import { type Reservation, reserveSlot } from "./sql/reserveSlot.ts"

/**
 * The slot a request went out at, on the database's clock (ms): when it was
 * reserved, and the rate factor it was spaced at, for a throttling answer to
 * say which rate it met.
 */
export interface Slot {
  readonly at: number
  readonly reservedAt: number
  readonly factor: number
}

/** The shared schedule could not be reached: the request was not sent. */
export class BudgetUnavailable extends Data.TaggedError("BudgetUnavailable")<{ readonly reason: string }> {}

/**
 * One channel's upstream request budget (docs/engine.md, The upstream
 * request budget), kept by every replica together in `upstream_budgets`.
 */
export interface ChannelBudget {
  readonly budget: Budget
  /**
   * Waits for the next slot of this operation and returns it: the request
   * goes out then, never sooner and never in a burst with others. `before`
   * (a submit's mark that the upstream may now hold the task) runs once, at
   * the first slot reached; when it made the request miss that slot (a
   * database write that took long), the request takes the next one.
   */
  readonly take: (operation: Operation, before?: Effect.Effect<void>) => Effect.Effect<Slot, BudgetUnavailable>
  /**
   * The upstream answered a request sent at `slot` with a 429 or a
   * Retry-After: the channel's rate is lowered for every replica (once per
   * burst) and its next slots wait past the Retry-After.
   */
  readonly throttled: (slot: Slot, retryAfterMs: number | undefined) => Effect.Effect<void>
  /** The channel's rate factor now, shared by every replica (1: the whole budget). */
  readonly factor: Effect.Effect<number>
}

/** How long a reservation is tried again while the database does not answer, before the request is given up. */
const RESERVE_RETRIES = Schedule.exponential("20 millis").pipe(
  Schedule.union(Schedule.spaced("1 second")),
  Schedule.upTo("30 seconds")
)

export const makeChannelBudget = (sql: SqlClient.SqlClient, channel: string, budget: Budget) =>
  Effect.gen(function*() {
    // Every schedule any operation of this channel uses, made once per process when first needed.
    const names = [
      ...new Set(
        (["submit", "poll", "find", "cancel", "delete", "check"] as const).flatMap((op) =>
          schedulesOf(budget, op).map((s) => s.name)
        )
      )
    ]
    // A few open reservations per operation and process: the shared schedule never runs far ahead of now.
    // First come, first served (FifoPermits.ts): a burst of submits may wait here by the thousand.
    const gates = new Map<
      Operation,
      { readonly withPermit: <A, E, R>(e: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R> }
    >()
    for (const op of ["submit", "poll", "find", "cancel", "delete", "check"] as const) {
      gates.set(op, yield* makeFifoPermits(openReservations(operationRate(budget, op))))
    }

    // Each schedule's slots are spaced with the headroom (Pacing.ts `spacingMs`).
    const spacedAt = (operation: Operation) =>
      schedulesOf(budget, operation).map((s) => ({ name: s.name, perSecond: s.perSecond * HEADROOM }))
    const reserve = (operation: Operation) =>
      reserveSlot(sql, channel, spacedAt(operation)).pipe(
        // The channel's rows are made by the first replica that paces it (and again should they be gone).
        Effect.flatMap((reservation) =>
          reservation !== undefined ? Effect.succeed(reservation) : ensureSchedules(sql, channel, names).pipe(
            Effect.zipRight(reserveSlot(sql, channel, spacedAt(operation))),
            Effect.flatMap((again) =>
              again === undefined
                ? Effect.fail(new BudgetUnavailable({ reason: "the channel's schedule rows are missing" }))
                : Effect.succeed(again)
            )
          )
        ),
        Effect.retry(RESERVE_RETRIES),
        Effect.catchAll((e) => Effect.fail(new BudgetUnavailable({ reason: e.message })))
      )

    const clock = makeDatabaseClock()

    /**
     * Sleeps until the slot on this process's clock, then runs `before`; false when it is then too late to send
     * without a burst.
     */
    const waitFor = (reservation: Reservation, before: Effect.Effect<void>) =>
      Effect.gen(function*() {
        clock.sample(reservation.now, yield* Clock.currentTimeMillis)
        const due = clock.toLocal(reservation.slotAt)
        const wait = due - (yield* Clock.currentTimeMillis)
        if (wait > 0) yield* Effect.sleep(Duration.millis(wait))
        yield* before
        // Late for whatever reason (an answer that took long, a timer that fired late, a busy process, a slow
        // mark): sent now, it would land close to the next slots.
        const late = (yield* Clock.currentTimeMillis) - due
        return late <= latenessAllowedMs(budget.perSecond * reservation.factor)
      })

    const take = (operation: Operation, before: Effect.Effect<void> = Effect.void) =>
      Effect.gen(function*() {
        // A slot missed is given up for a new one, never sent late; what runs before the request runs once.
        for (let pending = before;; pending = Effect.void) {
          const reservation = yield* reserve(operation)
          if (yield* waitFor(reservation, pending)) {
            return { at: reservation.slotAt, reservedAt: reservation.now, factor: reservation.factor } satisfies Slot
          }
          yield* Effect.logDebug("an upstream request slot was missed; taking the next one").pipe(
            Effect.annotateLogs({ channel, operation })
          )
        }
      }).pipe(gates.get(operation)!.withPermit)

    const throttled = (slot: Slot, retryAfterMs: number | undefined) =>
      Effect.gen(function*() {
        const rows = yield* lowerRate(sql, channel, slot.reservedAt, retryAfterMs ?? 0)
        const row = rows[0]
        if (row?.lowered) {
          yield* Effect.logWarning("the upstream throttled this channel; its request rate is lowered").pipe(
            Effect.annotateLogs({
              channel,
              rate_factor: Number(row.factor),
              requests_per_second: budget.perSecond * Number(row.factor),
              retry_after_ms: retryAfterMs ?? null
            })
          )
        }
      }).pipe(
        Effect.retry(RESERVE_RETRIES),
        // Lowering the rate is a courtesy to the upstream: a database blip must not fail the call that saw it.
        Effect.catchAllCause((cause) => Effect.logWarning("lowering a channel's request rate failed", cause))
      )

    const factor = budgetFactors(sql).pipe(
      Effect.map((factors) => factors.get(channel) ?? 1),
      Effect.orElseSucceed(() => 1)
    )

    return { budget, take, throttled, factor } satisfies ChannelBudget
  })
