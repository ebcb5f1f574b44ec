import type { TaskQuote } from "../client/Tasks.ts"
import { type Common, output } from "./Common.ts"

/**
 * What `--quote` prints instead of creating: the quote itself with `--json`,
 * else the charge, how it was worked out, where it would come from and
 * whether the balances cover it (the create would answer 402 otherwise).
 */
export const printQuote = (options: Pick<Common, "json">, quote: TaskQuote) =>
  output(options, quote, () => {
    const b = quote.billing
    return [
      `${quote.model} ${quote.operation}: ${b.credits} credits (${b.quantity} ${b.unit}${
        b.quantity === 1 ? "" : "s"
      } × ${b.unit_price} × ${b.multiplier})`,
      `from wallet ${quote.charge.wallet}, subscription ${quote.charge.subscription}; balance wallet ${quote.balance.wallet}, subscription ${quote.balance.subscription}`,
      quote.enough_balance ? "enough balance" : "not enough balance: creating it would be refused (402)"
    ]
  })
