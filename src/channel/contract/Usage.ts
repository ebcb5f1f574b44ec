import { type CostUnit, CostUnit as CostUnitSchema } from "../../platform/Settings.ts"

/**
 * What a provider counted for one upstream task, as its own answer tells it
 * (docs/adapters/README.md, Usage and billing). The engine stores it with
 * the attempt, prices it by the route's `cost` and keeps it for operators
 * only; callers never see it, and it never changes what a caller is charged.
 * An adapter reports what its provider's answer gives (Ark's tokens, the
 * seconds of Kling's videos, OpenAI's image tokens); where the answer gives
 * none, it reports nothing and the engine measures the outputs it stored
 * (seconds of video, images) or, failing those, takes what the request asked.
 */

/** The units usage is counted in: the units a route's `cost` is priced in. */
export const UsageUnit = CostUnitSchema
export type UsageUnit = CostUnit

export interface Usage {
  readonly unit: UsageUnit
  readonly quantity: number
  /** The provider's own fields the quantity was read from (`completion_tokens`, `predict_time`…), for operators. */
  readonly fields?: Readonly<Record<string, unknown>> | undefined
}

/**
 * What the provider charges for one upstream task by its own rules: the
 * usage its answer reports, and whether it bills the task at all (fal bills
 * successes only; Replicate a cancel after the start but no abort; Veo no
 * blocked video). Either may be left out where the answer does not say:
 * the engine then counts a success as billed and a failure as not.
 */
export interface Charge {
  readonly usage?: Usage | undefined
  readonly billed?: boolean | undefined
}

/** A number or a numeric string, as providers write counts (Kling's `"5"`, Ark's `108900`). */
const numberIn = (value: unknown): number | undefined => {
  const n = typeof value === "string" && value.trim() !== "" ? Number(value) : value
  return typeof n === "number" && Number.isFinite(n) && n >= 0 ? n : undefined
}

/**
 * The usage of `quantity` in `unit`, with the fields it was read from; undefined
 * where the quantity is not a count (absent, negative, not a number), so a
 * provider's schema drift is no usage rather than a wrong one.
 */
export const usageOf = (
  unit: UsageUnit,
  quantity: unknown,
  fields?: Readonly<Record<string, unknown>>
): Usage | undefined => {
  const n = numberIn(quantity)
  return n === undefined ? undefined : { unit, quantity: n, ...(fields === undefined ? {} : { fields }) }
}

/** The sum of the counts in `values` (numbers or numeric strings); undefined when any is not one, or none is given. */
export const sumOf = (values: ReadonlyArray<unknown>): number | undefined => {
  if (values.length === 0) return undefined
  let total = 0
  for (const value of values) {
    const n = numberIn(value)
    if (n === undefined) return undefined
    total += n
  }
  return total
}
