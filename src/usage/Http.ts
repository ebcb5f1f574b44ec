import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Layer } from "effect"
import { AdminAuthLive } from "../accounts/Auth.ts"
import { GatewayApi } from "../Api.ts"
import { readQuery } from "../platform/http/ListQuery.ts"
import { LossesParams, UsageParams } from "./Api.ts"
import { toCsv } from "./Csv.ts"
import { Usage } from "./Usage.ts"

/** The report's columns in a CSV file: the grouping's keys, then the sums. */
const SUMS = [
  "tasks",
  "credits_charged",
  "credits_refunded",
  "credits_net",
  "upstream_cost",
  "billed_attempts",
  "margin"
] as const
const KEY_COLUMNS = { day: "day", account: "account_id", model: "model", channel: "channel" } as const

const wantsCsv = (accept: string | undefined) => accept !== undefined && /\btext\/csv\b/i.test(accept)

export const AdminUsageLive = HttpApiBuilder.group(GatewayApi, "adminUsage", (handlers) =>
  Effect.gen(function*() {
    const usage = yield* Usage
    return handlers
      .handle("usage", () =>
        Effect.gen(function*() {
          const request = yield* HttpServerRequest.HttpServerRequest
          const params = yield* readQuery(UsageParams)
          const csv = wantsCsv(request.headers.accept)
          const { groupBy, lines, nextCursor } = yield* usage.report(params, csv ? "csv" : "json")
          if (!csv) {
            return {
              object: "usage.report" as const,
              from: params.from,
              to: params.to,
              group_by: groupBy,
              data: lines,
              has_more: nextCursor !== null,
              next_cursor: nextCursor
            }
          }
          // The next page, if any, as a Link (RFC 8288), so a script can follow it.
          const next = nextCursor === null ? undefined : new URL(request.url, "http://local")
          next?.searchParams.set("cursor", nextCursor!)
          return HttpServerResponse.text(
            toCsv(
              [...groupBy.map((k) => KEY_COLUMNS[k]), ...SUMS],
              lines
            ),
            {
              contentType: "text/csv; charset=utf-8",
              headers: {
                "content-disposition": `attachment; filename="usage-${params.from}-${params.to}.csv"`,
                ...(next === undefined ? {} : { link: `<${next.pathname}${next.search}>; rel="next"` })
              }
            }
          )
        }))
      .handle("losses", () =>
        Effect.gen(function*() {
          const params = yield* readQuery(LossesParams)
          const { lines, nextCursor } = yield* usage.losses(params)
          return {
            object: "usage.losses" as const,
            from: params.from,
            to: params.to,
            data: lines,
            has_more: nextCursor !== null,
            next_cursor: nextCursor
          }
        }))
  })).pipe(Layer.provide(AdminAuthLive))
