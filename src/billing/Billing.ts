import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { IdPrefix, newId } from "../platform/Ids.ts"
import { nowSeconds } from "../platform/Time.ts"
import { InsufficientBalance } from "./Errors.ts"
import { toCredits } from "./Money.ts"

export interface ChargeSplit {
  readonly walletMicros: number
  readonly subscriptionMicros: number
}

/**
 * Pre-charges and refunds. Both must run inside the caller's transaction (the
 * one that creates the task or writes its terminal state), so a task and its
 * money move together or not at all.
 */
export class Billing extends Context.Tag("Billing")<Billing, {
  /**
   * Takes `micros` from the account: from the subscription balance first when
   * the model's pricing policy allows it, the rest from the wallet. Fails with
   * 402 `insufficient_balance` and changes nothing when the two cannot cover it.
   */
  readonly charge: (
    accountId: string,
    taskId: string,
    micros: number,
    subscriptionAllowed: boolean
  ) => Effect.Effect<ChargeSplit, InsufficientBalance>
  /** Gives back exactly what `charge` took for the task, to the balances it came from. */
  readonly refund: (accountId: string, taskId: string, split: ChargeSplit) => Effect.Effect<void>
}>() {
  static readonly layer = Layer.effect(
    Billing,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      return {
        charge: (accountId, taskId, micros, subscriptionAllowed) =>
          Effect.gen(function*() {
            // NO KEY UPDATE, not UPDATE: the caller's INSERT of the task row already holds a
            // KEY SHARE lock on this account (the foreign key), and so do concurrent creates of the
            // same account; FOR UPDATE conflicts with those and two creates deadlock.
            const [account] = yield* sql<{ wallet_micros: number; subscription_micros: number }>`
              SELECT wallet_micros, subscription_micros FROM accounts WHERE id = ${accountId} FOR NO KEY UPDATE`
            const subscriptionMicros = subscriptionAllowed ? Math.min(account!.subscription_micros, micros) : 0
            const walletMicros = micros - subscriptionMicros
            if (walletMicros > account!.wallet_micros) {
              const available = account!.wallet_micros + (subscriptionAllowed ? account!.subscription_micros : 0)
              return yield* new InsufficientBalance({
                message: `This task costs ${toCredits(micros)} credits; the balance available to this model is ${
                  toCredits(available)
                } credits.`
              })
            }
            const now = yield* nowSeconds
            yield* sql`
              UPDATE accounts
              SET wallet_micros = wallet_micros - ${walletMicros},
                  subscription_micros = subscription_micros - ${subscriptionMicros},
                  updated_at = ${now}
              WHERE id = ${accountId}`
            yield* sql`
              INSERT INTO ledger (id, account_id, task_id, kind, wallet_micros, subscription_micros, created_at)
              VALUES (${
              newId(IdPrefix.ledger)
            }, ${accountId}, ${taskId}, 'charge', ${-walletMicros}, ${-subscriptionMicros}, ${now})`
            return { walletMicros, subscriptionMicros }
          }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("Billing.charge")),
        refund: (accountId, taskId, split) =>
          Effect.gen(function*() {
            const now = yield* nowSeconds
            yield* sql`
              UPDATE accounts
              SET wallet_micros = wallet_micros + ${split.walletMicros},
                  subscription_micros = subscription_micros + ${split.subscriptionMicros},
                  updated_at = ${now}
              WHERE id = ${accountId}`
            yield* sql`
              INSERT INTO ledger (id, account_id, task_id, kind, wallet_micros, subscription_micros, created_at)
              VALUES (${
              newId(IdPrefix.ledger)
            }, ${accountId}, ${taskId}, 'refund', ${split.walletMicros}, ${split.subscriptionMicros}, ${now})`
          }).pipe(Effect.orDie, Effect.withSpan("Billing.refund", { attributes: { "task.id": taskId } }))
      }
    })
  )
}
