import type { Charge, Usage, UsageUnit } from "../../channel/contract/Usage.ts"
import type { RouteCost } from "../../platform/Settings.ts"

/**
 * What an attempt cost at its provider (migration 24; docs/operating.md, The
 * operator's view of a task), for operators only: callers never see it and it
 * never changes their charge or refund. The engine stores what the adapter
 * says (the provider's reported usage and whether it bills the attempt, by
 * the provider's own rules); the rules themselves live in the adapters.
 */

/** What costing a task's attempts needs: the route's declared cost and what the request asked for. */
export interface Pricing {
  /** The route's `cost`; undefined when it declares none (the cost is then unknown, the usage still kept). */
  readonly cost: RouteCost | undefined
  /** What the request implies in its kind's own unit: seconds of video, or images. */
  readonly requested: { readonly unit: "second" | "image"; readonly quantity: number }
}

/** Where a recorded quantity came from. */
export type UsageSource =
  /** The provider's own answer counted it. */
  | "answer"
  /** Measured on the outputs stored: the seconds of the videos as probed, the number of images. */
  | "outputs"
  /** Implied by the request (its duration, its image count, one task): nothing better was known. */
  | "request"

/** The usage as `task_attempts.usage` keeps it: the provider's own fields beside the count the cost is made of. */
export interface RecordedUsage {
  readonly unit: UsageUnit
  readonly quantity: number
  /** Whether the provider's answer or output gave the quantity (false: the request implies it). */
  readonly reported: boolean
  readonly source: UsageSource
  readonly [field: string]: unknown
}

/** An attempt's row of cost: `usage`, `cost_micros` and `billed` of `task_attempts`. */
export interface AttemptCost {
  readonly usage: RecordedUsage | null
  /** Micro-units of the operator's money; null when the route declares no cost (or the usage is in no unit it prices). */
  readonly costMicros: number | null
  readonly billed: boolean
}

/** What the engine knows of an attempt's work when it ends. */
export interface AttemptWork extends Charge {
  readonly billed: boolean
  /** The outputs it stored: how many, and the seconds of video among them (undefined where none was probed). */
  readonly outputs?: { readonly count: number; readonly seconds: number | undefined } | undefined
}

const MICROS = 1_000_000

/** The cost of `usage` by the route's price, in micro-units; null when they are not in the same unit. */
const priced = (cost: RouteCost, usage: RecordedUsage | null) =>
  usage === null || usage.unit !== cost.unit ? null : Math.round(usage.quantity * cost.price * MICROS)

const recorded = (
  unit: UsageUnit,
  quantity: number,
  source: UsageSource,
  fields: Readonly<Record<string, unknown>> = {}
): RecordedUsage => {
  // The provider's fields first: the count and its origin are ours and win over a field of the same name.
  return { ...fields, unit, quantity, reported: source !== "request", source }
}

/** The quantity in `unit` the engine can count itself, from the outputs or else the request. */
const counted = (pricing: Pricing, work: AttemptWork, unit: UsageUnit, fields: Readonly<Record<string, unknown>>) => {
  if (unit === "task") return recorded("task", 1, "request", fields)
  if (unit !== pricing.requested.unit) return null
  const outputs = work.outputs
  if (outputs !== undefined && outputs.count > 0) {
    if (unit === "image") return recorded(unit, outputs.count, "outputs", fields)
    if (outputs.seconds !== undefined) return recorded(unit, outputs.seconds, "outputs", fields)
  }
  return recorded(unit, pricing.requested.quantity, "request", fields)
}

/**
 * The usage to keep and the cost it comes to. The unit is the cost's where the
 * route declares one (so the cost is made of the usage shown), else the
 * provider's, else the kind's own; the quantity is the provider's where its
 * answer counts in that unit, else measured on the outputs, else implied by
 * the request. An attempt the provider does not bill costs 0 (its usage kept).
 */
export const costOf = (pricing: Pricing, work: AttemptWork): AttemptCost => {
  const reported: Usage | undefined = work.usage
  const fields = reported?.fields ?? {}
  const unit = pricing.cost?.unit ?? reported?.unit ?? pricing.requested.unit
  const usage = reported !== undefined && reported.unit === unit
    ? recorded(unit, reported.quantity, "answer", fields)
    // Counted by the engine; in a unit only the provider counts (tokens), what it reported, else what the kind
    // counts (the cost, made of another unit, stays unknown).
    : counted(pricing, work, unit, fields) ??
      (reported === undefined
        ? counted(pricing, work, pricing.requested.unit, fields)
        : recorded(reported.unit, reported.quantity, "answer", fields))
  const costMicros = pricing.cost === undefined ? null : work.billed ? priced(pricing.cost, usage) : 0
  return { usage, costMicros, billed: work.billed }
}

/** An attempt that never reached a provider (refused, moved to the next channel): nothing used, nothing billed. */
export const nothingRan = (cost: RouteCost | undefined): AttemptCost => ({
  usage: null,
  costMicros: cost === undefined ? null : 0,
  billed: false
})

/**
 * An attempt whose fate upstream is unknown (a create that could not be
 * reconciled, a task past its deadline): counted as billed, with what the
 * request implies, until the provider's own record says otherwise
 * (reconciliation).
 */
export const presumedBilled = (pricing: Pricing): AttemptCost => costOf(pricing, { billed: true })

/** The outputs a run stored, as the cost counts them. */
export const outputsOf = (outputs: ReadonlyArray<{ readonly durationMs?: number | null | undefined }>) => {
  const durations = outputs.map((o) => o.durationMs)
  return {
    count: outputs.length,
    seconds: durations.every((d): d is number => typeof d === "number")
      ? durations.reduce((sum, d) => sum + d, 0) / 1000
      : undefined
  }
}
