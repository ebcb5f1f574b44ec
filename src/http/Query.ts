import { HttpServerRequest } from "@effect/platform"
import { Effect, Schema } from "effect"
import * as Errors from "../api/Errors.ts"
import { textProblem } from "../domain/Text.ts"
import { formatParseError } from "./Body.ts"

/**
 * Decodes a request's query string with `schema`: an unknown parameter (a
 * typo is not silently ignored), a repeated one, text the database cannot
 * store or a value the schema refuses is a 400 `invalid_request` naming it.
 */
export const readQuery = <A, I>(schema: Schema.Schema<A, I>) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const record: Record<string, string> = {}
    for (const [key, value] of new URL(request.url, "http://local").searchParams) {
      const problem = textProblem(key) ?? textProblem(value)
      if (problem !== undefined) return yield* Errors.badRequest("invalid_request", `Query parameter ${JSON.stringify(key)} ${problem}.`)
      if (key in record) return yield* Errors.badRequest("invalid_request", `Query parameter "${key}" is repeated.`)
      record[key] = value
    }
    return yield* Schema.decodeUnknown(schema, { onExcessProperty: "error", errors: "all" })(record).pipe(
      Effect.mapError((e) => Errors.badRequest("invalid_request", `Invalid query: ${formatParseError(e)}`))
    )
  })
