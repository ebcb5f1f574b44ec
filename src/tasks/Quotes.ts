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
}

/**
 * What a create would charge, without creating: the create's own checks
 * (Tasks.checkVideo, Tasks.validateImage: the same 400s) and its own price
 * (Tasks.videoPrice, Tasks.imagePrice), then the split over the caller's
 * balances now. Nothing is stored or charged; image files are read and
 * checked but not stored. A balance that cannot pay is `enough_balance`
 * false, not an error: the quote is how a caller finds out.
 */
const make = Effect.gen(function*() {
  const tasks = yield* Tasks
  const billing = yield* Billing
  const registry = yield* Registry

  const quote = (principal: Principal, model: string, operation: string, price: Price, subscriptionAllowed: boolean) =>
    Effect.map(billing.balance(principal.accountId), (balance): TaskQuote => {
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
        enough_balance: split.enough
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
