import { SqlClient } from "@effect/sql"
import { Context, Effect, Layer } from "effect"
import { toCredits } from "../billing/Money.ts"
import { InvalidUsageQuery } from "./Errors.ts"
import { type LossRow, lossRows } from "./sql/lossRows.ts"
import { usageRows } from "./sql/usageRows.ts"
import {
  dateOf,
  decodeCursor,
  encodeCursor,
  type GroupKey,
  KEY_ORDER,
  MAX_WINDOW_S,
  PAGE,
  type UsageQuery
} from "./UsageQuery.ts"

/** One row of the usage report, amounts in credits (charged, refunded) and the operator's money (cost). */
export interface UsageLine {
  readonly day?: string
  readonly account_id?: string
  readonly model?: string
  readonly channel?: string
  readonly tasks: number
  readonly credits_charged: number
  readonly credits_refunded: number
  readonly credits_net: number
  readonly upstream_cost: number
  readonly billed_attempts: number
  /** Net credits less the upstream cost, a credit counted as one unit of the operator's money. */
  readonly margin: number
}

/** One attempt where money was lost. */
export interface LossLine {
  readonly task_id: string
  readonly attempt: number
  readonly account_id: string
  readonly model: string
  readonly channel: string
  readonly started_at: number
  readonly reasons: ReadonlyArray<"billed_while_refunded" | "usage_mismatch">
  readonly upstream_cost: number | null
  readonly credits_refunded: number
  readonly usage: { readonly unit: string | null; readonly reported: number | null; readonly charged: number | null }
}

/** What the handlers pass: the raw query parameters, checked here. */
export interface ReportParams {
  readonly from: number
  readonly to: number
  readonly group_by?: string | undefined
  readonly limit?: number | undefined
  readonly cursor?: string | undefined
}

const window = (params: { readonly from: number; readonly to: number }) =>
  params.to <= params.from
    ? Effect.fail(new InvalidUsageQuery({ message: "\"to\" must be after \"from\" (Unix seconds)." }))
    : params.to - params.from > MAX_WINDOW_S
    ? Effect.fail(new InvalidUsageQuery({ message: "A report covers at most 366 days; ask for a shorter window." }))
    : Effect.void

const groupingOf = (groupBy: string | undefined) => {
  const named = groupBy === undefined || groupBy === "" ? [] : groupBy.split(",").map((k) => k.trim())
  const unknown = named.find((k) => !(KEY_ORDER as ReadonlyArray<string>).includes(k))
  if (unknown !== undefined) {
    return Effect.fail(
      new InvalidUsageQuery({ message: `"group_by" takes ${KEY_ORDER.join(", ")}; "${unknown}" is none of them.` })
    )
  }
  if (new Set(named).size !== named.length) {
    return Effect.fail(new InvalidUsageQuery({ message: "\"group_by\" names a key twice." }))
  }
  return Effect.succeed(KEY_ORDER.filter((k) => named.includes(k)))
}

const badCursor = new InvalidUsageQuery({ message: "\"cursor\" is not one this report gave." })

/**
 * The operator's money (docs/operating.md, Money): the usage report over a
 * window (credits charged, refunded and net, the upstream cost and the
 * margin, grouped by day, account, model and channel as asked) and the
 * losses. Both are bounded by their window's indexes.
 */
const make = Effect.gen(function*() {
  const sql = yield* SqlClient.SqlClient

  const report = (params: ReportParams, format: "json" | "csv") =>
    Effect.gen(function*() {
      yield* window(params)
      const groupBy = yield* groupingOf(params.group_by)
      const after = params.cursor === undefined ? undefined : decodeCursor(params.cursor, groupBy.length)
      if (params.cursor !== undefined && after === undefined) return yield* badCursor
      const query: UsageQuery = {
        from: params.from,
        to: params.to,
        groupBy,
        limit: Math.min(params.limit ?? PAGE[format], PAGE.max),
        after
      }
      const rows = yield* usageRows(sql, query)
      const page = rows.slice(0, query.limit)
      const last = page.at(-1)
      const nextCursor = rows.length > query.limit && last !== undefined
        ? encodeCursor(groupBy.map((k) => k === "day" ? Number(last[k]) : String(last[k])))
        : null
      return { groupBy, lines: page.map((row) => lineOf(row, groupBy)), nextCursor }
    }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("Usage.report"))

  const losses = (params: Omit<ReportParams, "group_by">) =>
    Effect.gen(function*() {
      yield* window(params)
      const limit = Math.min(params.limit ?? PAGE.json, PAGE.max)
      const cursor = params.cursor === undefined ? undefined : decodeCursor(params.cursor, 3)
      if (params.cursor !== undefined && cursor === undefined) return yield* badCursor
      const before = cursor === undefined
        ? undefined
        : { createdAt: Number(cursor[0]), taskId: String(cursor[1]), attempt: Number(cursor[2]) }
      const rows = yield* lossRows(sql, { from: params.from, to: params.to, limit, before })
      const page = rows.slice(0, limit)
      const last = page.at(-1)
      const nextCursor = rows.length > limit && last !== undefined
        ? encodeCursor([Number(last.created_at), last.task_id, Number(last.attempt)])
        : null
      return { lines: page.map(lossOf), nextCursor }
    }).pipe(Effect.catchTag("SqlError", Effect.die), Effect.withSpan("Usage.losses"))

  return { report, losses } as const
})

const lineOf = (row: Record<string, unknown>, groupBy: ReadonlyArray<GroupKey>): UsageLine => {
  const charged = Number(row.charged)
  const refunded = Number(row.refunded)
  const cost = Number(row.cost)
  return {
    ...(groupBy.includes("day") ? { day: dateOf(Number(row.day)) } : {}),
    ...(groupBy.includes("account") ? { account_id: String(row.account) } : {}),
    ...(groupBy.includes("model") ? { model: String(row.model) } : {}),
    ...(groupBy.includes("channel") ? { channel: String(row.channel) } : {}),
    tasks: Number(row.tasks),
    credits_charged: toCredits(charged),
    credits_refunded: toCredits(refunded),
    credits_net: toCredits(charged - refunded),
    upstream_cost: toCredits(cost),
    billed_attempts: Number(row.billed),
    margin: toCredits(charged - refunded - cost)
  }
}

const lossOf = (row: LossRow): LossLine => ({
  task_id: row.task_id,
  attempt: Number(row.attempt),
  account_id: row.account_id,
  model: row.model,
  channel: row.channel,
  started_at: Number(row.created_at),
  reasons: [
    ...(row.billed_refunded ? ["billed_while_refunded" as const] : []),
    ...(row.mismatch ? ["usage_mismatch" as const] : [])
  ],
  upstream_cost: row.cost_micros === null ? null : toCredits(Number(row.cost_micros)),
  credits_refunded: toCredits(Number(row.refunded_micros)),
  usage: {
    unit: row.usage?.unit ?? null,
    reported: row.usage?.quantity === undefined ? null : Number(row.usage.quantity),
    charged: row.charged_quantity === null ? null : Number(row.charged_quantity)
  }
})

export class Usage extends Context.Tag("Usage")<Usage, Effect.Effect.Success<typeof make>>() {
  static readonly layer = Layer.effect(Usage, make)
}
