import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { toCredits } from "../billing/Money.ts"
import { Outbox, type RecordedEvent } from "./Outbox.ts"

/** The `data.object` of an `account.balance_low` event (docs/webhooks.md). */
export interface BalanceLow {
  readonly object: "account.balance"
  readonly account_id: string
  readonly wallet_credits: number
  readonly subscription_credits: number
  readonly threshold_credits: number
}

/**
 * The account's low-balance alert: one `account.balance_low` event when a
 * charge takes its wallet below the threshold its operator set, written in
 * that charge's transaction (the charge raised the account's flag there, so
 * no second event is written until the wallet is back at or above the
 * threshold: Billing, migration 23). Delivered, signed and retried as every
 * event is.
 */
export class BalanceAlerts extends Context.Tag("BalanceAlerts")<BalanceAlerts, {
  /** Writes the event inside the caller's transaction, with the balances as they are now. */
  readonly record: (accountId: string) => Effect.Effect<RecordedEvent>
  /** Wakes the delivery workers once the caller's transaction has committed. */
  readonly announce: (event: RecordedEvent) => Effect.Effect<void>
}>() {
  static readonly layer = Layer.effect(
    BalanceAlerts,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const outbox = yield* Outbox
      return {
        record: (accountId) =>
          Effect.gen(function*() {
            const [account] = yield* sql<
              { wallet_micros: number; subscription_micros: number; low_balance_micros: number }
            >`SELECT wallet_micros, subscription_micros, low_balance_micros FROM accounts WHERE id = ${accountId}`
            const object: BalanceLow = {
              object: "account.balance",
              account_id: accountId,
              wallet_credits: toCredits(Number(account!.wallet_micros)),
              subscription_credits: toCredits(Number(account!.subscription_micros)),
              threshold_credits: toCredits(Number(account!.low_balance_micros))
            }
            return yield* outbox.record(accountId, "account.balance_low", object, null)
          }).pipe(Effect.orDie, Effect.withSpan("BalanceAlerts.record")),
        announce: outbox.announce
      }
    })
  )
}
