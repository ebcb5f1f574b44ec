/**
 * The charge's part of what `create_task` (migration 28) answers: the
 * outcome and what the caller needs to say why. `balance_low` (the charge
 * would cross the account's low-balance threshold; made again in a
 * transaction that records the event) and `key_taken` (the Idempotency-Key
 * was already used) took and wrote nothing, as the refusals did.
 */
export interface ChargeRow {
  readonly outcome: "charged" | "insufficient_balance" | "queue_full" | "spend_limit" | "balance_low" | "key_taken"
  readonly wallet: number
  readonly subscription: number
  readonly from_subscription: number
  readonly queued: number
  readonly group_name: string
  readonly spent_today: number
  readonly spent_month: number
  readonly daily_limit: number | null
  readonly monthly_limit: number | null
  readonly balance_low: boolean
}

/** What the create's statement needs from billing to take a task's price (Billing `terms`). */
export interface ChargeTerms {
  /** The charge, in micro-credits. */
  readonly micros: number
  /** Whether the subscription balance may pay first (the model's pricing policy). */
  readonly useSubscription: boolean
  /** Each group's `max_queued`, as JSON (a group without one has none). */
  readonly queuedLimits: string
}
