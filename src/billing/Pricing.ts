import type { GroupsFile } from "../platform/Settings.ts"
import { MICROS_PER_CREDIT } from "./Money.ts"

/**
 * The multiplier of a group. An aggregate group stands for its members and
 * bills at the cheapest of them (config/groups.json); an unknown group, which
 * config validation and the admin API prevent, bills at 1.
 */
export const groupMultiplier = (groups: GroupsFile, name: string): number => {
  const group = groups.groups[name]
  if (group === undefined) return 1
  if ("multiplier" in group) return group.multiplier
  return Math.min(...group.members.map((member) => groupMultiplier(groups, member)))
}

/**
 * Credits for a task, in micro-credits: price per unit × units × group
 * multiplier. For video the unit is a requested second (spec, Billing):
 * references, modes and resolution never change it, resolutions being
 * separate models. For images it is an output image.
 */
export const chargeMicros = (pricePerUnit: number, units: number, multiplier: number): number =>
  Math.round(pricePerUnit * MICROS_PER_CREDIT * units * multiplier)

/** What a task costs and how it was worked out (the quote's `billing`). */
export interface Price {
  /** What the model is priced by: a requested second of video, or an output image. */
  readonly unit: "second" | "image"
  readonly quantity: number
  /** Credits per unit, before the group's multiplier. */
  readonly unitPrice: number
  readonly multiplier: number
  /** The charge, in micro-credits: what the create takes and the quote announces. */
  readonly micros: number
}

/** The one place a task's charge is worked out: the create charges it, the quote shows it. */
export const priceOf = (unit: Price["unit"], unitPrice: number, quantity: number, multiplier: number): Price => ({
  unit,
  quantity,
  unitPrice,
  multiplier,
  micros: chargeMicros(unitPrice, quantity, multiplier)
})

/**
 * How a charge of `micros` would be taken from these balances, by the rule
 * Billing.charge applies in its statement: the subscription first when the
 * model allows it, the rest from the wallet; `enough` false when the wallet
 * cannot cover the rest (the create would answer 402).
 */
export const splitOf = (
  micros: number,
  balance: { readonly walletMicros: number; readonly subscriptionMicros: number },
  subscriptionAllowed: boolean
) => {
  const fromSubscription = subscriptionAllowed ? Math.min(balance.subscriptionMicros, micros) : 0
  return {
    walletMicros: micros - fromSubscription,
    subscriptionMicros: fromSubscription,
    enough: micros - fromSubscription <= balance.walletMicros
  }
}
