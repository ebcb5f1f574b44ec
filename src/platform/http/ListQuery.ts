import { HttpServerRequest } from "@effect/platform"
import { Effect, Schema } from "effect"
import { textProblem } from "../Text.ts"
import { formatParseError } from "./Body.ts"
import * as Errors from "./HttpFailure.ts"

/** A `created_after` / `created_before` bound, Unix seconds. */
export const UnixSeconds = Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative())

/** The spec's list `limit`, 1 to 100; a handler applies the default of 20. */
export const PageLimit = Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 100))
export const DEFAULT_PAGE_LIMIT = 20

/** The spec's list `limit` with its default applied. */
export const Limit = Schema.optionalWith(PageLimit, { default: () => DEFAULT_PAGE_LIMIT })

/**
 * The query parameters of a listing, decoded by `schema`. A repeated or
 * unknown parameter is refused, so a typo is not silently ignored, and so is
 * text the database cannot store; every failure is 400 `invalid_request`
 * naming the parameter.
 */
export const readQuery = <A, I>(schema: Schema.Schema<A, I>) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const params = new URL(request.url, "http://local").searchParams
    const record: Record<string, string> = {}
    for (const [key, value] of params) {
      const problem = textProblem(key) ?? textProblem(value)
      if (problem !== undefined) {
        return yield* Errors.badRequest("invalid_request", `Query parameter ${JSON.stringify(key)} ${problem}.`)
      }
      if (key in record) {
        return yield* Errors.badRequest("invalid_request", `Query parameter "${key}" is repeated.`)
      }
      record[key] = value
    }
    return yield* Schema.decodeUnknown(schema, { onExcessProperty: "error", errors: "all" })(record)
      .pipe(Effect.mapError((e) => Errors.badRequest("invalid_request", `Invalid query: ${formatParseError(e)}`)))
  })
