import { Schema } from "effect"
import { failure } from "../platform/Failure.ts"

/** The balances available to the model cannot cover the charge; nothing is created (docs/api.md, Money: 402). */
export class InsufficientBalance extends Schema.TaggedError<InsufficientBalance>()("InsufficientBalance", {
  ...failure(402, "insufficient_balance"),
  message: Schema.String
}) {}

/**
 * The account already has as many tasks queued as its group allows
 * (`max_queued`, config/groups.json): checked under the account's lock at the
 * pre-charge, so nothing is charged or created (docs/api.md, Account limits: 429).
 * `retryAfter` is a suggestion: a queued task starts or ends within it on a
 * channel that is working.
 */
export class TooManyQueuedTasks extends Schema.TaggedError<TooManyQueuedTasks>()("TooManyQueuedTasks", {
  ...failure(429, "too_many_queued_tasks"),
  message: Schema.String,
  retryAfter: Schema.Number,
  /** The account's group, for the refusals' metric (never in the answer). */
  group: Schema.String
}) {}

/**
 * The key's spend today or this month (UTC), with this task, would pass a
 * limit the operator set on it (`POST /admin/v1/keys/{key_id}/limits`):
 * nothing is charged or created (docs/api.md, Spend limits: 429).
 * `retryAfter` is the time until the limit that was passed starts over.
 */
export class SpendLimitExceeded extends Schema.TaggedError<SpendLimitExceeded>()("SpendLimitExceeded", {
  ...failure(429, "spend_limit_exceeded"),
  message: Schema.String,
  retryAfter: Schema.Number
}) {}
