import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { AppConfig } from "../platform/AppConfig.ts"
import { IdPrefix, newId } from "../platform/Ids.ts"
import type { GroupsFile } from "../platform/Settings.ts"
import { nowSeconds } from "../platform/Time.ts"
import type { ChargeRow, ChargeTerms } from "./ChargeRow.ts"
import { InsufficientBalance, SpendLimitExceeded, TooManyQueuedTasks } from "./Errors.ts"
import { MICROS_PER_CREDIT, toCredits } from "./Money.ts"
import { dayOf, keySpend, nextMonthStart } from "./sql/keySpend.ts"
import { refundTask } from "./sql/refundTask.ts"

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
 * the create's statement applies (`create_task`): the subscription first when the
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

/** What a charge took, and whether it took the wallet below the account's low-balance threshold. */
export interface Charged extends ChargeSplit {
  readonly balanceLow: boolean
}

/** Why a key's spend refuses a charge, and when the limit that was passed starts over (the next UTC day or month). */
const spendRefusal = (row: ChargeRow, micros: number, now: number) => {
  const daily = row.daily_limit !== null && Number(row.spent_today) + micros > Number(row.daily_limit)
  const [spent, limit] = daily ? [row.spent_today, row.daily_limit] : [row.spent_month, row.monthly_limit]
  const startsOver = daily ? (dayOf(now) + 1) * 86_400 : nextMonthStart(now)
  return new SpendLimitExceeded({
    message: `This task costs ${toCredits(micros)} credits; this key has spent ${toCredits(Number(spent))} of its ${
      daily ? "daily" : "monthly"
    } limit of ${toCredits(Number(limit))} credits.`,
    retryAfter: Math.max(1, startsOver - now)
  })
}

/** What a create would meet at the charge: the balances, the account's queue and the key's spend against their limits. */
export interface Standing extends ChargeSplit {
  readonly queued: number
  readonly maxQueued: number | null
  readonly spentTodayMicros: number
  readonly spentMonthMicros: number
  readonly dailyLimitMicros: number | null
  readonly monthlyLimitMicros: number | null
}

/**
 * Prices, pre-charges and refunds. Charges and refunds must run inside the
 * caller's transaction (the one that creates the task or writes its terminal
 * state), so a task and its money move together or not at all.
 */
export class Billing extends Context.Tag("Billing")<Billing, {
  /** What a task priced so costs; the create charges exactly this (`terms`), the quote shows it. */
  readonly price: (priced: Priced) => Price
  /**
   * What the create's statement needs to take the task's price (`create_task`,
   * migration 28, which takes it under the account's lock in the create's own
   * statement): the charge in micro-credits, whether the subscription may pay
   * first, and each group's `max_queued`.
   */
  readonly terms: (priced: Priced) => ChargeTerms
  /**
   * What the create's statement answered about the charge: what it took
   * (from the subscription balance first when the model's pricing policy
   * allows it, the rest from the wallet), or why it took nothing: 402
   * `insufficient_balance` when the two cannot cover it, 429
   * `too_many_queued_tasks` when the account already has its group's
   * `max_queued` tasks queued, 429 `spend_limit_exceeded` when the key's
   * spend today or this month would pass a limit set on it. `balanceLow`:
   * this charge took the wallet below the account's low-balance threshold
   * (once per crossing).
   */
  readonly settle: (
    row: ChargeRow,
    priced: Priced,
    now: number
  ) => Effect.Effect<Charged, InsufficientBalance | TooManyQueuedTasks | SpendLimitExceeded>
  /** Gives back exactly what a create took for the task, to the balances it came from. */
  readonly refund: (accountId: string, taskId: string, split: ChargeSplit) => Effect.Effect<void>
  /**
   * The account's balances now, its tasks queued against its group's
   * `max_queued` (null for none), and the key's spend against its limits,
   * as a quote shows them (nothing locked).
   */
  readonly standing: (accountId: string, keyId: string) => Effect.Effect<Standing>
}>() {
  static readonly layer = Layer.effect(
    Billing,
    Effect.gen(function*() {
      const sql = yield* SqlClient.SqlClient
      const { groups, limits } = yield* AppConfig
      // Each group's `max_queued`, as the charge reads it under the account's lock (a group without one has none).
      const queuedLimits = JSON.stringify(Object.fromEntries(
        Object.entries(groups.groups).flatMap(([name, group]) =>
          group.max_queued === undefined ? [] : [[name, group.max_queued]]
        )
      ))
      return {
        price: (priced) => priceWith(groups, priced),
        terms: (priced) => ({
          micros: priceWith(groups, priced).micros,
          useSubscription: priced.subscriptionAllowed,
          queuedLimits
        }),
        settle: (row, priced, now) =>
          Effect.gen(function*() {
            const { micros } = priceWith(groups, priced)
            switch (row.outcome) {
              case "queue_full":
                return yield* new TooManyQueuedTasks({
                  message: `This account has ${row.queued} tasks queued, the most its group allows; ` +
                    "create more once some have started.",
                  retryAfter: limits.poll_interval_s,
                  group: row.group_name
                })
              case "spend_limit":
                return yield* spendRefusal(row, micros, now)
              case "insufficient_balance": {
                const available = Number(row.wallet) + (priced.subscriptionAllowed ? Number(row.subscription) : 0)
                return yield* new InsufficientBalance({
                  message: `This task costs ${toCredits(micros)} credits; the balance available to this model is ${
                    toCredits(available)
                  } credits.`
                })
              }
              // The create's statement makes these two again or replays; they never come to be settled.
              case "balance_low":
              case "key_taken":
                return yield* Effect.die(new Error(`a create's charge was settled on "${row.outcome}"`))
            }
            const fromSubscription = Number(row.from_subscription)
            return {
              walletMicros: micros - fromSubscription,
              subscriptionMicros: fromSubscription,
              balanceLow: row.balance_low
            }
          }),
        refund: (accountId, taskId, split) =>
          Effect.flatMap(
            nowSeconds,
            (now) => refundTask(sql, { accountId, taskId, ledgerId: newId(IdPrefix.ledger), ...split, now })
          ).pipe(
            Effect.orDie,
            Effect.withSpan("Billing.refund", { attributes: { "task.id": taskId } })
          ),
        standing: (accountId, keyId) =>
          Effect.gen(function*() {
            const now = yield* nowSeconds
            const [row] = yield* sql<{
              wallet_micros: number
              subscription_micros: number
              group_name: string
              queued: number
              daily_limit_micros: number | null
              monthly_limit_micros: number | null
            }>`
              SELECT a.wallet_micros, a.subscription_micros, a.group_name,
                (SELECT coalesce(sum(queued), 0) FROM task_lanes WHERE account_id = ${accountId} AND queued > 0) AS queued,
                k.daily_limit_micros, k.monthly_limit_micros
              FROM accounts a LEFT JOIN api_keys k ON k.id = ${keyId} WHERE a.id = ${accountId}`
            if (row === undefined) return yield* Effect.die(new Error(`account ${accountId} vanished`))
            const spent = (yield* keySpend(sql, [keyId], now)).get(keyId)
            return {
              walletMicros: Number(row.wallet_micros),
              subscriptionMicros: Number(row.subscription_micros),
              queued: Number(row.queued),
              maxQueued: groups.groups[row.group_name]?.max_queued ?? null,
              spentTodayMicros: spent?.today ?? 0,
              spentMonthMicros: spent?.month ?? 0,
              dailyLimitMicros: row.daily_limit_micros === null ? null : Number(row.daily_limit_micros),
              monthlyLimitMicros: row.monthly_limit_micros === null ? null : Number(row.monthly_limit_micros)
            }
          }).pipe(Effect.orDie, Effect.withSpan("Billing.standing", { captureStackTrace: false }))
      }
    })
  )
}
