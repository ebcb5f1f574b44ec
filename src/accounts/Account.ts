import { Schema } from "effect"
import { CreditAmount } from "../billing/Money.ts"

export const GroupName = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9][a-z0-9_-]{0,63}$/, { message: () => "a group name: lowercase letters, digits, _ or -" })
)

export const CreateAccountRequest = Schema.Struct({
  name: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200)),
  group: Schema.optional(GroupName),
  wallet_credits: Schema.optional(CreditAmount.pipe(Schema.nonNegative())),
  subscription_credits: Schema.optional(CreditAmount.pipe(Schema.nonNegative()))
})
export type CreateAccountRequest = typeof CreateAccountRequest.Type

export const CreateKeyRequest = Schema.Struct({
  kind: Schema.Literal("model", "resource"),
  group: Schema.optional(GroupName)
})
export type CreateKeyRequest = typeof CreateKeyRequest.Type

export const CreditsRequest = Schema.Struct({
  wallet: Schema.optional(CreditAmount),
  subscription: Schema.optional(CreditAmount)
})
export type CreditsRequest = typeof CreditsRequest.Type

/** A key's spend limits in credits (UTC day and month); null removes one, a field left out keeps it. */
export const KeyLimitsRequest = Schema.Struct({
  daily_credits: Schema.optional(Schema.NullOr(CreditAmount.pipe(Schema.positive()))),
  monthly_credits: Schema.optional(Schema.NullOr(CreditAmount.pipe(Schema.positive())))
})
export type KeyLimitsRequest = typeof KeyLimitsRequest.Type

/** A key's limits and what it spent today and this month (UTC), net of refunds, in credits. */
export const KeySpend = Schema.Struct({
  limits: Schema.Struct({ daily_credits: Schema.NullOr(Schema.Number), monthly_credits: Schema.NullOr(Schema.Number) }),
  spent: Schema.Struct({ today: Schema.Number, this_month: Schema.Number })
})

export const KeyLimits = Schema.Struct({ id: Schema.String, object: Schema.Literal("api_key"), ...KeySpend.fields })

/** The wallet balance under which the account's webhook gets one `account.balance_low`; null for none. */
export const LowBalanceRequest = Schema.Struct({
  threshold_credits: Schema.NullOr(CreditAmount.pipe(Schema.nonNegative()))
})
export type LowBalanceRequest = typeof LowBalanceRequest.Type

export const LowBalance = Schema.Struct({
  threshold_credits: Schema.NullOr(Schema.Number),
  /** The wallet is below the threshold and the event was sent; down again once it is back at or above it. */
  alerted: Schema.Boolean
})

export const Balances = Schema.Struct({
  wallet_credits: Schema.Number,
  subscription_credits: Schema.Number
})

export const Account = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("account"),
  name: Schema.String,
  group: Schema.String,
  ...Balances.fields,
  webhook: Schema.NullOr(Schema.Struct({
    url: Schema.String,
    enabled: Schema.Boolean,
    /** Why the service disabled it (its deliveries kept failing); absent otherwise. */
    disabled_reason: Schema.optional(Schema.String)
  })),
  created_at: Schema.Number
})
export type Account = typeof Account.Type

export const LedgerTotals = Schema.Struct({
  credited: Schema.Number,
  charged: Schema.Number,
  refunded: Schema.Number,
  entries: Schema.Number
})

export const AccountDetail = Schema.Struct({
  ...Account.fields,
  keys: Schema.Array(Schema.Struct({
    id: Schema.String,
    kind: Schema.Literal("model", "resource"),
    hint: Schema.String,
    group: Schema.NullOr(Schema.String),
    disabled: Schema.Boolean,
    created_at: Schema.Number,
    ...KeySpend.fields
  })),
  low_balance: LowBalance,
  ledger: LedgerTotals,
  /**
   * The account's share of the channels: its group's limits (null for
   * none) and where it stands against them: its tasks queued over every
   * channel, and in flight on each channel that has any.
   */
  capacity: Schema.Struct({
    weight: Schema.Number,
    max_queued: Schema.NullOr(Schema.Number),
    max_in_flight_per_channel: Schema.NullOr(Schema.Number),
    queued: Schema.Number,
    channels: Schema.Array(Schema.Struct({ channel: Schema.String, queued: Schema.Number, in_flight: Schema.Number }))
  })
})
export type AccountDetail = typeof AccountDetail.Type

export const IssuedKey = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("api_key"),
  account_id: Schema.String,
  kind: Schema.Literal("model", "resource"),
  group: Schema.NullOr(Schema.String),
  key: Schema.String,
  created_at: Schema.Number
})

/** What a bearer key turned out to be; webhook keys are recognised only to be refused with 403. */
export type Credential =
  | Principal
  | { readonly kind: "webhook"; readonly accountId: string; readonly keyId: string; readonly group: string }

/** Who a request authenticated as. */
export interface Principal {
  readonly accountId: string
  readonly keyId: string
  readonly kind: "model" | "resource"
  /** The key's own group, else the account's. */
  readonly group: string
}
