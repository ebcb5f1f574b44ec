import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../platform/AppConfig.ts"
import { IdPrefix, newId } from "../platform/Ids.ts"
import type { GroupsFile } from "../platform/Settings.ts"
import { nowSeconds } from "../platform/Time.ts"
import { InsufficientBalance } from "./Errors.ts"
import { MICROS_PER_CREDIT, toCredits } from "./Money.ts"

export interface ChargeSplit {
  readonly walletMicros: number
  readonly subscriptionMicros: number
}

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
 * What a task is priced by, as its model and request say: credits per unit
 * (a requested second of video, or an output image; references, modes and
 * resolution never change it, resolutions being separate models), how many
 * units, and the caller's group, whose multiplier applies.
 */
export interface Priced {
  readonly unit: "second" | "image"
  readonly unitPrice: number
  readonly quantity: number
  readonly group: string
  /** The model's pricing policy: whether the subscription balance may pay; otherwise only the wallet. */
  readonly subscriptionAllowed: boolean
}

/** What a task costs and how it was worked out (the quote's `billing`). */
export interface Price {
  readonly unit: Priced["unit"]
  readonly quantity: number
  /** Credits per unit, before the group's multiplier. */
  readonly unitPrice: number
  readonly multiplier: number
  /** The charge, in micro-credits: what the create takes and the quote announces. */
  readonly micros: number
}

/** The one place a task's charge is worked out: price per unit × units × the group's multiplier. */
const priceWith = (groups: GroupsFile, priced: Priced): Price => {
  const multiplier = groupMultiplier(groups, priced.group)
  return {
    unit: priced.unit,
    quantity: priced.quantity,
    unitPrice: priced.unitPrice,
    multiplier,
    micros: Math.round(priced.unitPrice * MICROS_PER_CREDIT * priced.quantity * multiplier)
  }
}

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

/**
 * Prices, pre-charges and refunds. Charges and refunds must run inside the
 * caller's transaction (the one that creates the task or writes its terminal
 * state), so a task and its money move together or not at all.
 */
export class Billing extends Context.Tag("Billing")<Billing, {
  /** What a task priced so costs; the create charges exactly this (`charge`), the quote shows it. */
  readonly price: (priced: Priced) => Price
  /**
   * Takes the task's price from the account: from the subscription balance
   * first when the model's pricing policy allows it, the rest from the
   * wallet. Fails with 402 `insufficient_balance` and changes nothing when
   * the two cannot cover it.
   */
  readonly charge: (
    accountId: string,
    taskId: string,
    priced: Priced
  ) => Effect.Effect<ChargeSplit, InsufficientBalance>
  /** Gives back exactly what `charge` took for the task, to the balances it came from. */
  readonly refund: (accountId: string, taskId: string, split: ChargeSplit) => Effect.Effect<void>
  /** The account's balances now, as a quote shows them (nothing locked). */
  readonly balance: (accountId: string) => Effect.Effect<ChargeSplit>
}>() {
  static readonly layer = Layer.effect(
    Billing,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { groups } = yield* AppConfig
      return {
        price: (priced) => priceWith(groups, priced),
        charge: (accountId, taskId, priced) =>
          Effect.gen(function*() {
            const { micros } = priceWith(groups, priced)
            const { subscriptionAllowed } = priced
            const now = yield* nowSeconds
            // One statement: the account row is locked, checked, debited and the ledger written in one
            // round trip, so concurrent creates of one account wait on its lock for as little as can be.
            // NO KEY UPDATE, not UPDATE: the task row's foreign key takes KEY SHARE locks on the account,
            // which FOR UPDATE would conflict with (two creates of the same account would deadlock).
            const [row] = yield* sql<
              { wallet_micros: number; subscription_micros: number; from_subscription: number; charged: boolean }
            >`
              WITH account AS (
                SELECT wallet_micros, subscription_micros,
                  CASE WHEN ${subscriptionAllowed}::boolean THEN LEAST(subscription_micros, ${micros}::bigint)
                    ELSE 0::bigint END AS from_subscription
                FROM accounts WHERE id = ${accountId} FOR NO KEY UPDATE
              ), debit AS (
                UPDATE accounts
                SET wallet_micros = accounts.wallet_micros - (${micros}::bigint - account.from_subscription),
                    subscription_micros = accounts.subscription_micros - account.from_subscription,
                    updated_at = ${now}
                FROM account
                WHERE accounts.id = ${accountId}
                  AND ${micros}::bigint - account.from_subscription <= account.wallet_micros
                RETURNING account.from_subscription
              ), entry AS (
                INSERT INTO ledger (id, account_id, task_id, kind, wallet_micros, subscription_micros, created_at)
                SELECT ${newId(IdPrefix.ledger)}::text, ${accountId}::text, ${taskId}::text, 'charge',
                  -(${micros}::bigint - from_subscription), -from_subscription, ${now}::bigint
                FROM debit
              )
              SELECT wallet_micros, subscription_micros, from_subscription, EXISTS (SELECT 1 FROM debit) AS charged
              FROM account`
            if (row === undefined) return yield* Effect.die(new Error(`account ${accountId} vanished`))
            if (!row.charged) {
              const available = row.wallet_micros + (subscriptionAllowed ? row.subscription_micros : 0)
              return yield* new InsufficientBalance({
                message: `This task costs ${toCredits(micros)} credits; the balance available to this model is ${
                  toCredits(available)
                } credits.`
              })
            }
            return { walletMicros: micros - row.from_subscription, subscriptionMicros: row.from_subscription }
          }).pipe(
            Effect.catchTag("SqlError", Effect.die),
            Effect.withSpan("Billing.charge", { captureStackTrace: false })
          ),
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
          }).pipe(Effect.orDie, Effect.withSpan("Billing.refund", { attributes: { "task.id": taskId } })),
        balance: (accountId) =>
          sql<{ wallet_micros: number; subscription_micros: number }>`
            SELECT wallet_micros, subscription_micros FROM accounts WHERE id = ${accountId}`.pipe(
            Effect.flatMap(([row]) =>
              row === undefined
                ? Effect.die(new Error(`account ${accountId} vanished`))
                : Effect.succeed({
                  walletMicros: Number(row.wallet_micros),
                  subscriptionMicros: Number(row.subscription_micros)
                })
            ),
            Effect.orDie,
            Effect.withSpan("Billing.balance", { captureStackTrace: false })
          )
      }
    })
  )
}
