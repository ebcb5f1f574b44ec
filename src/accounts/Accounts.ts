import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer, Option } from "effect"
import { ledgerPage } from "../billing/LedgerQuery.ts"
import { toCredits, toMicros } from "../billing/Money.ts"
import { keySpend } from "../billing/sql/keySpend.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { Sha256 } from "../platform/Digest.ts"
import { listPage } from "../platform/http/ListEnvelope.ts"
import { IdPrefix, newId } from "../platform/Ids.ts"
import { generateKey, hashKey, keyHint } from "../platform/Keys.ts"
import { nowSeconds } from "../platform/Time.ts"
import type { Account, AccountDetail, CreateAccountRequest, CreateKeyRequest, CreditsRequest } from "./Account.ts"
import { makeAuthenticate } from "./Authenticate.ts"
import { AccountNotFound, InvalidAccountRequest, KeyNotFound } from "./Errors.ts"
import { KEY_DISABLED_CHANNEL, KeyCache } from "./KeyCache.ts"

interface AccountRow {
  readonly id: string
  readonly name: string
  readonly group_name: string
  readonly wallet_micros: number
  readonly subscription_micros: number
  readonly webhook_url: string | null
  readonly webhook_enabled: boolean
  readonly webhook_key_enc: string | null
  readonly webhook_disabled_reason: string | null
  readonly low_balance_micros: number | null
  readonly low_balance_notified: boolean
  readonly created_at: number
}

interface KeyRow {
  readonly id: string
  readonly account_id: string
  readonly kind: "model" | "resource"
  readonly key_hash: string
  readonly key_hint: string
  readonly group_name: string | null
  readonly disabled_at: number | null
  readonly daily_limit_micros: number | null
  readonly monthly_limit_micros: number | null
  readonly created_at: number
}

/** A key's limits and spend as the operator sees them (credits). */
export const keySpendOf = (
  key: Pick<KeyRow, "daily_limit_micros" | "monthly_limit_micros">,
  spent: { readonly today: number; readonly month: number } | undefined
) => ({
  limits: {
    daily_credits: key.daily_limit_micros === null ? null : toCredits(Number(key.daily_limit_micros)),
    monthly_credits: key.monthly_limit_micros === null ? null : toCredits(Number(key.monthly_limit_micros))
  },
  spent: { today: toCredits(spent?.today ?? 0), this_month: toCredits(spent?.month ?? 0) }
})

const toAccount = (row: AccountRow): Account => ({
  id: row.id,
  object: "account",
  name: row.name,
  group: row.group_name,
  wallet_credits: toCredits(row.wallet_micros),
  subscription_credits: toCredits(row.subscription_micros),
  webhook: row.webhook_url === null ? null : {
    url: row.webhook_url,
    enabled: row.webhook_enabled,
    ...(row.webhook_disabled_reason === null ? {} : { disabled_reason: row.webhook_disabled_reason })
  },
  created_at: row.created_at
})

const accountNotFound = AccountNotFound.of

const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient
  const config = yield* AppConfig
  const sha256 = yield* Sha256
  const cache = yield* KeyCache

  const checkGroup = (group: string | undefined) =>
    group === undefined || group in config.groups.groups
      ? Effect.void
      : Effect.fail(
        new InvalidAccountRequest({
          code: "invalid_request",
          message: `Unknown group "${group}"; see config/groups.json.`
        })
      )

  const findRow = (id: string) =>
    sql<AccountRow>`SELECT * FROM accounts WHERE id = ${id}`.pipe(
      Effect.map((rows) => Option.fromNullable(rows[0])),
      Effect.orDie
    )

  const getRow = (id: string) =>
    Effect.flatMap(
      findRow(id),
      Option.match({ onNone: () => Effect.fail(accountNotFound(id)), onSome: Effect.succeed })
    )

  const credit = (accountId: string, walletMicros: number, subscriptionMicros: number, note: string) =>
    Effect.gen(function*() {
      const now = yield* nowSeconds
      const rows = yield* sql<AccountRow>`
        UPDATE accounts
        SET wallet_micros = wallet_micros + ${walletMicros},
            subscription_micros = subscription_micros + ${subscriptionMicros},
            low_balance_notified = low_balance_notified
              AND wallet_micros + ${walletMicros} < coalesce(low_balance_micros, 0),
            updated_at = ${now}
        WHERE id = ${accountId}
          AND wallet_micros + ${walletMicros} >= 0
          AND subscription_micros + ${subscriptionMicros} >= 0
        RETURNING *`
      if (rows.length === 0) {
        yield* getRow(accountId)
        return yield* new InvalidAccountRequest({
          code: "invalid_request",
          message: "The adjustment would make a balance negative."
        })
      }
      yield* sql`
        INSERT INTO ledger (id, account_id, kind, wallet_micros, subscription_micros, note, created_at)
        VALUES (${
        newId(IdPrefix.ledger)
      }, ${accountId}, 'credit', ${walletMicros}, ${subscriptionMicros}, ${note}, ${now})`
      return rows[0]!
    })

  const create = (req: CreateAccountRequest) =>
    Effect.gen(function*() {
      yield* checkGroup(req.group)
      const id = newId(IdPrefix.account)
      const now = yield* nowSeconds
      yield* sql`
        INSERT INTO accounts (id, name, group_name, created_at, updated_at)
        VALUES (${id}, ${req.name}, ${req.group ?? config.groups.default_group}, ${now}, ${now})`
      const wallet = toMicros(req.wallet_credits ?? 0)
      const subscription = toMicros(req.subscription_credits ?? 0)
      const row = wallet !== 0 || subscription !== 0
        ? yield* credit(id, wallet, subscription, "initial balance")
        : yield* getRow(id)
      return toAccount(row)
    }).pipe(
      // The row was inserted in this transaction: not finding it is a defect, not a 404 of this endpoint.
      Effect.catchTag("AccountNotFound", Effect.die),
      sql.withTransaction,
      Effect.catchTag("SqlError", Effect.die),
      Effect.withSpan("Accounts.create")
    )

  const detail = (id: string) =>
    Effect.gen(function*() {
      const row = yield* getRow(id)
      const keys = yield* sql<KeyRow>`SELECT * FROM api_keys WHERE account_id = ${id} ORDER BY created_at, id`
      const [totals] = yield* sql<{ credited: number; charged: number; refunded: number; entries: number }>`
        SELECT
          coalesce(sum(wallet_micros + subscription_micros) FILTER (WHERE kind = 'credit'), 0)::bigint AS credited,
          coalesce(-sum(wallet_micros + subscription_micros) FILTER (WHERE kind = 'charge'), 0)::bigint AS charged,
          coalesce(sum(wallet_micros + subscription_micros) FILTER (WHERE kind = 'refund'), 0)::bigint AS refunded,
          count(*)::int AS entries
        FROM ledger WHERE account_id = ${id}`
      const lanes = yield* sql<{ channel: string; queued: number; in_flight: number }>`
        SELECT channel, queued, in_flight FROM task_lanes
        WHERE account_id = ${id} AND (queued > 0 OR in_flight > 0) ORDER BY channel`
      const group = config.groups.groups[row.group_name]
      const spends = yield* keySpend(sql, keys.filter((k) => k.kind === "model").map((k) => k.id), yield* nowSeconds)
      const result: AccountDetail = {
        ...toAccount(row),
        keys: keys.map((k) => ({
          id: k.id,
          kind: k.kind,
          hint: k.key_hint,
          group: k.group_name,
          disabled: k.disabled_at !== null,
          created_at: k.created_at,
          ...keySpendOf(k, spends.get(k.id))
        })),
        low_balance: {
          threshold_credits: row.low_balance_micros === null ? null : toCredits(Number(row.low_balance_micros)),
          alerted: row.low_balance_notified
        },
        ledger: {
          credited: toCredits(totals!.credited),
          charged: toCredits(totals!.charged),
          refunded: toCredits(totals!.refunded),
          entries: totals!.entries
        },
        capacity: {
          weight: group?.weight ?? 1,
          max_queued: group?.max_queued ?? null,
          max_in_flight_per_channel: group?.max_in_flight_per_channel ?? null,
          queued: lanes.reduce((n, l) => n + Number(l.queued), 0),
          channels: lanes.map((l) => ({ channel: l.channel, queued: Number(l.queued), in_flight: Number(l.in_flight) }))
        }
      }
      return result
    }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("Accounts.detail"))

  const issueKey = (accountId: string, req: CreateKeyRequest) =>
    Effect.gen(function*() {
      yield* checkGroup(req.group)
      yield* getRow(accountId)
      const key = generateKey(req.kind)
      const id = newId(IdPrefix.key)
      const now = yield* nowSeconds
      const hash = yield* Effect.promise(() => hashKey(key))
      yield* sql`
        INSERT INTO api_keys (id, account_id, kind, key_hash, key_hint, group_name, created_at)
        VALUES (${id}, ${accountId}, ${req.kind}, ${hash}, ${keyHint(key)}, ${req.group ?? null}, ${now})`
      return {
        id,
        object: "api_key" as const,
        account_id: accountId,
        kind: req.kind,
        group: req.group ?? null,
        key,
        created_at: now
      }
    }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("Accounts.issueKey"))

  const disableKey = (keyId: string) =>
    Effect.gen(function*() {
      const now = yield* nowSeconds
      const rows = yield* sql<KeyRow>`
        UPDATE api_keys SET disabled_at = coalesce(disabled_at, ${now}) WHERE id = ${keyId} RETURNING *`
      if (rows.length === 0) return yield* new KeyNotFound({ message: `No key with id "${keyId}".` })
      // Other replicas drop their cached look-up on commit (KeyCache.ts); this one at once.
      yield* sql`SELECT pg_notify(${KEY_DISABLED_CHANNEL}, ${keyId})`
      cache.evict(keyId)
      const k = rows[0]!
      return { id: k.id, object: "api_key" as const, kind: k.kind, disabled: true, disabled_at: k.disabled_at! }
    }).pipe(sql.withTransaction, Effect.catchTag("SqlError", Effect.die), Effect.withSpan("Accounts.disableKey"))

  const { authenticate, cached: cachedCredential } = makeAuthenticate(sql, sha256, cache)

  const addCredits = (accountId: string, req: CreditsRequest) =>
    credit(accountId, toMicros(req.wallet ?? 0), toMicros(req.subscription ?? 0), "admin adjustment").pipe(
      Effect.map((row) => ({
        object: "balances" as const,
        account_id: accountId,
        wallet_credits: toCredits(row.wallet_micros),
        subscription_credits: toCredits(row.subscription_micros)
      })),
      sql.withTransaction,
      Effect.catchTag("SqlError", Effect.die),
      Effect.withSpan("Accounts.addCredits")
    )

  /** The account's ledger, newest first, in a window; an unknown cursor is an empty page. */
  const ledger = (
    accountId: string,
    q: { readonly from?: number; readonly to?: number; readonly limit?: number; readonly cursor?: string }
  ) =>
    Effect.gen(function*() {
      yield* getRow(accountId)
      const page = yield* ledgerPage(sql, accountId, {
        after: q.cursor,
        limit: q.limit ?? 100,
        from: q.from,
        to: q.to
      })
      return listPage(page.data, page.hasMore)
    }).pipe(Effect.withSpan("Accounts.ledger"))

  return {
    create,
    detail,
    ledger,
    issueKey,
    disableKey,
    authenticate,
    cachedCredential,
    addCredits
  } as const
})

export class Accounts extends Context.Tag("Accounts")<Accounts, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Accounts, make).pipe(Layer.provide(KeyCache.layer))
}
