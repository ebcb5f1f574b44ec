import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { AdminAuth } from "../accounts/Security.ts"
import { errors, httpFailures } from "../platform/http/ErrorContract.ts"
import { InvalidUsageQuery } from "./Errors.ts"

/** The report's query (read by hand by the handler, so a bad one answers the spec's error body). */
export const UsageParams = Schema.Struct({
  from: Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative()),
  to: Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative()),
  group_by: Schema.optional(Schema.String),
  limit: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 10_000))),
  cursor: Schema.optional(Schema.String)
})

export const LossesParams = UsageParams.pipe(Schema.omit("group_by"))

export const UsageLine = Schema.Struct({
  day: Schema.optional(Schema.String),
  account_id: Schema.optional(Schema.String),
  model: Schema.optional(Schema.String),
  channel: Schema.optional(Schema.String),
  tasks: Schema.Number,
  credits_charged: Schema.Number,
  credits_refunded: Schema.Number,
  credits_net: Schema.Number,
  upstream_cost: Schema.Number,
  billed_attempts: Schema.Number,
  margin: Schema.Number
})

export const UsageReport = Schema.Struct({
  object: Schema.Literal("usage.report"),
  from: Schema.Number,
  to: Schema.Number,
  group_by: Schema.Array(Schema.String),
  data: Schema.Array(UsageLine),
  has_more: Schema.Boolean,
  /** The `cursor` of the next page; null on the last. */
  next_cursor: Schema.NullOr(Schema.String)
})

export const LossLine = Schema.Struct({
  task_id: Schema.String,
  attempt: Schema.Number,
  account_id: Schema.String,
  model: Schema.String,
  channel: Schema.String,
  started_at: Schema.Number,
  reasons: Schema.Array(Schema.Literal("billed_while_refunded", "usage_mismatch")),
  upstream_cost: Schema.NullOr(Schema.Number),
  credits_refunded: Schema.Number,
  usage: Schema.Struct({
    unit: Schema.NullOr(Schema.String),
    reported: Schema.NullOr(Schema.Number),
    charged: Schema.NullOr(Schema.Number)
  })
})

export const LossList = Schema.Struct({
  object: Schema.Literal("usage.losses"),
  from: Schema.Number,
  to: Schema.Number,
  data: Schema.Array(LossLine),
  has_more: Schema.Boolean,
  next_cursor: Schema.NullOr(Schema.String)
})

const QueryErrors = Schema.Union(httpFailures(400), errors(InvalidUsageQuery))

/**
 * What the service earned and what it cost (docs/operating.md, Money), for
 * operators: the usage report (JSON, or CSV with `Accept: text/csv`) and the
 * losses. Bearer ADMIN_TOKEN.
 */
export class AdminUsageApi extends HttpApiGroup.make("adminUsage")
  .add(
    HttpApiEndpoint.get("usage", "/admin/v1/usage").addSuccess(UsageReport).addError(QueryErrors)
      .annotate(
        OpenApi.Description,
        "Credits charged, refunded and net, upstream cost and margin over ?from=&to= (Unix seconds), " +
          "grouped by ?group_by= (day, account, model, channel); ?limit=&cursor=; CSV with Accept: text/csv"
      )
  )
  .add(
    HttpApiEndpoint.get("losses", "/admin/v1/usage/losses").addSuccess(LossList).addError(QueryErrors)
      .annotate(
        OpenApi.Description,
        "Attempts the provider billed while the caller was refunded, and usage that differs from what was charged"
      )
  )
  .middleware(AdminAuth)
  .annotate(OpenApi.Title, "Admin: usage")
{}
