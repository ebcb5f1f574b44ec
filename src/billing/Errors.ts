import { Schema } from "effect"
import { failure } from "../platform/Failure.ts"

/** The balances available to the model cannot cover the charge; nothing is created (docs/api.md, Money: 402). */
export class InsufficientBalance extends Schema.TaggedError<InsufficientBalance>()("InsufficientBalance", {
  ...failure(402, "insufficient_balance"),
  message: Schema.String
}) {}
