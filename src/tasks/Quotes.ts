import { Context, Effect, Layer } from "effect"
import type { Principal } from "../accounts/Account.ts"
import { Billing, type Price, splitOf } from "../billing/Billing.ts"
import { toCredits } from "../billing/Money.ts"
import { Registry } from "../catalog/Registry.ts"
import type { ImageSubmission } from "./ImageTasks.ts"
import { Tasks } from "./Tasks.ts"

/** The quote's answer (docs/api.md, Quotes). */
export interface TaskQuote {
  readonly object: "task.quote"
  readonly model: string
  readonly operation: string
  readonly billing: {
    readonly unit: "second" | "image"
    readonly quantity: number
    readonly unit_price: number
    readonly multiplier: number
    readonly credits: number
  }
  readonly charge: { readonly wallet: number; readonly subscription: number }
  readonly balance: { readonly wallet: number; readonly subscription: number }
  readonly enough_balance: boolean
  /** The account's tasks queued, its group's `max_queued` (null for none), and whether one more may queue. */
  readonly queue: { readonly queued: number; readonly max_queued: number | null; readonly room: boolean }
  /** The key's spend today and this month (UTC) against its limits (null for none), and whether this task fits. */
  readonly spend: {
    readonly spent_today: number
    readonly spent_this_month: number
    readonly daily_limit: number | null
    readonly monthly_limit: number | null
    readonly room: boolean
  }
}

/**
 * What a create would charge, without creating: the create's own checks
 * (Tasks.checkVideo, Tasks.validateImage: the same 400s) and its own price
 * (Tasks.videoPrice, Tasks.imagePrice), then the split over the caller's
 * balances now. Nothing is stored or charged; image files are read and
 * checked but not stored. A balance that cannot pay is `enough_balance`
 * false, a full queue `queue.room` false and a key's spend limit in the way
 * `spend.room` false, not errors: the quote is how a caller finds out.
 */
/** Whether a charge of `micros` keeps spend within `limit` (none: always). */
const fits = (spent: number, limit: number | null, micros: number) => limit === null || spent + micros <= limit

const make = Effect.gen(function*() {
  const tasks = yield* Tasks
  const billing = yield* Billing
  const registry = yield* Registry

  const quote = (principal: Principal, model: string, operation: string, price: Price, subscriptionAllowed: boolean) =>
    Effect.map(billing.standing(principal.accountId, principal.keyId), (balance): TaskQuote => {
      const split = splitOf(price.micros, balance, subscriptionAllowed)
      return {
        object: "task.quote",
        model,
        operation,
        billing: {
          unit: price.unit,
          quantity: price.quantity,
          unit_price: price.unitPrice,
          multiplier: price.multiplier,
          credits: toCredits(price.micros)
        },
        charge: { wallet: toCredits(split.walletMicros), subscription: toCredits(split.subscriptionMicros) },
        balance: { wallet: toCredits(balance.walletMicros), subscription: toCredits(balance.subscriptionMicros) },
        enough_balance: split.enough,
        queue: {
          queued: balance.queued,
          max_queued: balance.maxQueued,
          room: balance.maxQueued === null || balance.queued < balance.maxQueued
        },
        spend: {
          spent_today: toCredits(balance.spentTodayMicros),
          spent_this_month: toCredits(balance.spentMonthMicros),
          daily_limit: balance.dailyLimitMicros === null ? null : toCredits(balance.dailyLimitMicros),
          monthly_limit: balance.monthlyLimitMicros === null ? null : toCredits(balance.monthlyLimitMicros),
          room: fits(balance.spentTodayMicros, balance.dailyLimitMicros, price.micros) &&
            fits(balance.spentMonthMicros, balance.monthlyLimitMicros, price.micros)
        }
      }
    })

  const quoteVideo = (principal: Principal, body: unknown) =>
    Effect.gen(function*() {
      const admitted = yield* tasks.checkVideo(body)
      const { request, served } = admitted
      const price = tasks.videoPrice(principal, admitted)
      return yield* quote(principal, request.model, request.operation, price, served.settings.subscription)
    }).pipe(Effect.withSpan("Quotes.quoteVideo"))

  const quoteImage = (principal: Principal, submission: ImageSubmission) =>
    Effect.gen(function*() {
      const valid = yield* tasks.validateImage(submission)
      const price = tasks.imagePrice(principal, valid)
      const subscriptionAllowed = registry.image(valid.model)!.settings.subscription
      return yield* quote(principal, valid.model, valid.operation, price, subscriptionAllowed)
    }).pipe(Effect.withSpan("Quotes.quoteImage"))

  return { quoteVideo, quoteImage } as const
})

export class Quotes extends Context.Tag("Quotes")<Quotes, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Quotes, make)
}
