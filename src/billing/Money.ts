import { Schema } from "effect"

/**
 * Credits are stored as integer micro-credits so that charges, refunds and
 * sums are exact; the API speaks in credits with up to six decimals.
 */
export const MICROS_PER_CREDIT = 1_000_000

export const toMicros = (credits: number): number => Math.round(credits * MICROS_PER_CREDIT)
export const toCredits = (micros: number): number => micros / MICROS_PER_CREDIT

/** An amount of credits accepted from a caller: finite, at most 1e9, six decimals. */
export const CreditAmount = Schema.Number.pipe(
  Schema.finite(),
  Schema.between(-1e9, 1e9),
  Schema.filter((n) => Number.isInteger(Math.round(n * MICROS_PER_CREDIT * 1e3) / 1e3) || "at most six decimals")
)
