import type { ChannelSettings } from "./contract/ChannelSettings.ts"

/**
 * The arithmetic of a channel's upstream request budget (docs/engine.md,
 * The upstream request budget), pure so it can be checked on its own
 * (test/engine/upstream-pacing.test.ts). The shared schedule in the database
 * (sql/reserveSlot.ts, sql/lowerRate.ts) applies the same formulas with the
 * constants below; UpstreamBudget.ts and the poller use the rest.
 */

/** What a request is, for the budget: the adapter operations that reach the upstream, and the channel check. */
export type Operation = "submit" | "poll" | "find" | "cancel" | "delete" | "check"

/** The share of the budget reads leave to creates when config says nothing. */
export const DEFAULT_CREATE_SHARE = 0.2

/** A 429 (or a Retry-After) multiplies the channel's rate by this. */
export const DECREASE = 0.5
/** The rate never falls below this share of the budget, so a channel is never silenced for good. */
export const FLOOR = 0.05
/** The rate climbs back by this share of the budget every second (a halving is made up in 25 s). */
export const RECOVERY_PER_S = 0.02

/** A channel's budget as configured: requests per second in all, per operation, and the creates' share. */
export interface Budget {
  readonly perSecond: number
  readonly byOperation: Readonly<Partial<Record<Exclude<Operation, "check" | "delete">, number>>>
  readonly createShare: number
}

/** The channel's budget, or undefined when it has none (today's behaviour: no pacing). */
export const budgetOf = (settings: ChannelSettings): Budget | undefined =>
  settings.requests_per_second === undefined ? undefined : {
    perSecond: settings.requests_per_second,
    byOperation: settings.requests_per_second_by_operation ?? {},
    createShare: settings.create_share ?? DEFAULT_CREATE_SHARE
  }

/**
 * One schedule of the channel: a row of `upstream_budgets` holding the next
 * free slot, and the rate it spaces its slots at when the channel's rate is
 * the whole budget.
 */
export interface Schedule {
  readonly name: string
  readonly perSecond: number
}

/**
 * The schedules a request of this operation takes its slot in: its slot is
 * the latest of their next free slots, and each moves on by its own spacing.
 * `all` keeps the total; `reads` keeps polls, finds, cancels and checks
 * together within what creates leave; an operation with a rate of its own
 * keeps that too. Creates are held only by the total (and their own rate):
 * they may take whatever the reads leave.
 */
export const schedulesOf = (budget: Budget, operation: Operation): ReadonlyArray<Schedule> => {
  const schedules: Array<Schedule> = [{ name: "all", perSecond: budget.perSecond }]
  if (operation !== "submit" && budget.createShare > 0) {
    schedules.push({ name: "reads", perSecond: budget.perSecond * (1 - budget.createShare) })
  }
  // A channel check and a delete of a provider's copy (rare, an operator's or a sweep's) have no schedule of their own.
  const own = operation === "check" || operation === "delete" ? undefined : budget.byOperation[operation]
  if (own !== undefined) schedules.push({ name: operation, perSecond: own })
  return schedules
}

/** The most requests of this operation a second at the whole budget: the slowest of its schedules. */
export const operationRate = (budget: Budget, operation: Operation) =>
  Math.min(...schedulesOf(budget, operation).map((s) => s.perSecond))

/**
 * Slots are spaced for this share of a rate, never the whole of it: a
 * request reaches the upstream a little after its slot (a timer that fires
 * late, a process the machine did not run at once, a connection to open), by
 * more for some requests than for others, and the headroom keeps such
 * jitter from putting more than the budget in one of the upstream's seconds.
 */
export const HEADROOM = 0.95

/** Milliseconds between two slots of a schedule at this rate factor (1: the whole budget), headroom included. */
export const spacingMs = (perSecond: number, factor: number) => 1000 / (perSecond * HEADROOM * factor)

/**
 * One reservation, as sql/reserveSlot.ts makes it in one statement (the
 * reference its test holds the statement to): the slot is the latest of its
 * schedules' next free slots, or now; each schedule's next free slot moves
 * on by its own spacing at the channel's rate factor.
 */
export const reserveIn = (
  nextAt: ReadonlyMap<string, number>,
  schedules: ReadonlyArray<Schedule>,
  now: number,
  factor: number
): { readonly slot: number; readonly nextAt: ReadonlyMap<string, number> } => {
  const slot = Math.max(now, ...schedules.map((s) => nextAt.get(s.name) ?? 0))
  const next = new Map(nextAt)
  for (const s of schedules) next.set(s.name, slot + spacingMs(s.perSecond, factor))
  return { slot, nextAt: next }
}

/**
 * The channel's rate factor now: what the last lowering left (`factor`, at
 * `loweredAt`, ms), climbing back additively up to the whole budget.
 */
export const currentFactor = (factor: number, loweredAt: number, now: number) =>
  Math.min(1, factor + RECOVERY_PER_S * Math.max(0, now - loweredAt) / 1000)

/**
 * The factor after a throttling answer: multiplied down, never below the
 * floor. A request whose slot was reserved before the last lowering was
 * paced at the old rate (it may still have gone out after it: slots are
 * reserved a little ahead), so its 429 says nothing new and lowers nothing:
 * a burst of 429s halves the rate once, not once per answer. A 429 to a
 * request paced at the lowered rate lowers it again.
 */
export const loweredFactor = (current: number, reservedAt: number, loweredAt: number) =>
  reservedAt < loweredAt ? current : Math.max(FLOOR, current * DECREASE)

/**
 * Reservations one process keeps open per schedule: enough to keep the rate
 * busy for a quarter of a second, so the shared schedule never runs far
 * ahead of now (a create is never queued behind seconds of polls booked in
 * advance, and a lowered rate applies at once).
 */
export const LOOKAHEAD_S = 0.25
export const openReservations = (perSecond: number) => Math.max(1, Math.ceil(perSecond * LOOKAHEAD_S))

/**
 * How late a request may still go at its slot (ms): a quarter of the spacing
 * at the whole budget. Later than this (the process was busy, the timer
 * fired late) it would land close to the next slots, so the slot is given up
 * and a new one taken. What happens between this check and the bytes on the
 * wire (a connection opened, a busy event loop) delays a request further: the
 * rest of the spacing is left for it, so that a one-second window still holds
 * no more than the budget and a request or two.
 */
export const latenessAllowedMs = (perSecond: number) => Math.min(250, 250 / perSecond)

/**
 * The gap between two polls of one task that the budget allows, in whole ms
 * as the engine schedules: every waiting task polled once costs
 * `waiting ÷ batch` requests, at `perSecond`. The engine never polls more
 * often than the adapter's own cadence either.
 */
export const budgetPollGapMs = (waiting: number, perSecond: number, batch: number) =>
  waiting <= 0 ? 0 : Math.ceil(Math.ceil(waiting / batch) / perSecond * 1000)

/**
 * How many due tasks a poller may take in one pass: those it can poll within
 * `windowMs` at `perSecond` requests of `batch` ids each, at least one
 * request's worth, at most `passSize`.
 */
export const pollClaimLimit = (perSecond: number, batch: number, windowMs: number, passSize: number) =>
  Math.min(passSize, Math.max(batch, Math.floor(perSecond * windowMs / 1000) * batch))
