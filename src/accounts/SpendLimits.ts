import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { toMicros } from "../billing/Money.ts"
import { keySpend } from "../billing/sql/keySpend.ts"
import { nowSeconds } from "../platform/Time.ts"
import type { KeyLimitsRequest, LowBalanceRequest } from "./Account.ts"
import { keySpendOf } from "./Accounts.ts"
import { AccountNotFound, InvalidAccountRequest, KeyNotFound } from "./Errors.ts"

/**
 * What an operator sets to bound an account's money (docs/operating.md,
 * Spend limits): a model token's credits per UTC day and month, which the
 * charge holds it to (Billing, migration 23), and the wallet balance under
 * which the account's webhook gets one `account.balance_low`.
 */
const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  /** Sets (a number) or removes (null) each limit given; a limit left out stays as it was. */
  const setKeyLimits = (keyId: string, req: KeyLimitsRequest) =>
    Effect.gen(function*() {
      const micros = (credits: number | null | undefined) =>
        credits === undefined ? undefined : credits === null ? null : toMicros(credits)
      const daily = micros(req.daily_credits)
      const monthly = micros(req.monthly_credits)
      const [key] = yield* sql<
        { kind: string; daily_limit_micros: number | null; monthly_limit_micros: number | null }
      >`
        UPDATE api_keys SET
          daily_limit_micros = ${daily === undefined ? sql`daily_limit_micros` : sql`${daily}::bigint`},
          monthly_limit_micros = ${monthly === undefined ? sql`monthly_limit_micros` : sql`${monthly}::bigint`}
        WHERE id = ${keyId} AND kind = 'model'
        RETURNING kind, daily_limit_micros, monthly_limit_micros`
      if (key === undefined) {
        const [other] = yield* sql`SELECT kind FROM api_keys WHERE id = ${keyId}`
        return yield* other === undefined
          ? new KeyNotFound({ message: `No key with id "${keyId}".` })
          : new InvalidAccountRequest({
            code: "invalid_request",
            message: "Spend limits apply to model tokens (sk-), the keys that create tasks."
          })
      }
      const spent = yield* keySpend(sql, [keyId], yield* nowSeconds)
      return { id: keyId, object: "api_key" as const, ...keySpendOf(key, spent.get(keyId)) }
    }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("SpendLimits.setKeyLimits"))

  /**
   * The account's low-balance threshold. Its alert is armed again at once
   * when the wallet is at or above the new threshold (or there is none).
   */
  const setLowBalance = (accountId: string, req: LowBalanceRequest) =>
    Effect.gen(function*() {
      const threshold = req.threshold_credits === null ? null : toMicros(req.threshold_credits)
      const [row] = yield* sql<{ low_balance_micros: number | null; low_balance_notified: boolean }>`
        UPDATE accounts SET low_balance_micros = ${threshold},
          low_balance_notified = low_balance_notified AND wallet_micros < coalesce(${threshold}::bigint, 0)
        WHERE id = ${accountId}
        RETURNING low_balance_micros, low_balance_notified`
      if (row === undefined) return yield* AccountNotFound.of(accountId)
      return { threshold_credits: req.threshold_credits, alerted: row.low_balance_notified }
    }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("SpendLimits.setLowBalance"))

  return { setKeyLimits, setLowBalance } as const
})

export class SpendLimits extends Context.Tag("SpendLimits")<SpendLimits, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(SpendLimits, make)
}
