import { HttpApiSchema } from "@effect/platform"
import { Effect, FiberRef, ParseResult, Schema, SchemaAST } from "effect"
import { ErrorType, type Failure } from "../Failure.ts"
import { HttpFailure } from "./HttpFailure.ts"
import { CurrentRequestId } from "./RequestId.ts"

/**
 * How the contracts (`Api.ts` files) declare what an endpoint fails with:
 * each feature error class, sent as the spec's error body under its status.
 * Schemas only, so a contract stays importable alone (typed client, CLI).
 */

/** The HTTP error body of the spec. */
export const ErrorBody = Schema.Struct({
  error: Schema.Struct({
    type: ErrorType,
    code: Schema.String,
    message: Schema.String,
    request_id: Schema.String
  })
})
export type ErrorBody = typeof ErrorBody.Type

/** A feature error class: a schema of its instances, with the fields of `platform/Failure.ts`. */
export type FailureClass<A extends Failure = Failure> = Schema.Schema<A, any, never> & {
  new(...args: ReadonlyArray<any>): A
}

const fieldType = (schema: Schema.Schema.Any, name: string): SchemaAST.AST => {
  const found = SchemaAST.getPropertySignatures(schema.ast).find((p) => p.name === name)
  if (found === undefined) throw new Error(`${String(schema)} has no "${name}" field`)
  return found.type
}

const literal = (ast: SchemaAST.AST) => {
  if (!SchemaAST.isLiteral(ast)) throw new Error(`expected a fixed value, got ${String(ast)}`)
  return ast.literal
}

const requestId = FiberRef.get(CurrentRequestId)

const toBody = (e: Failure) =>
  Effect.map(requestId, (id) => ({ error: { type: e.type, code: e.code, message: e.message, request_id: id } }))

const readOnly = (encoded: unknown, ast: SchemaAST.AST) =>
  // Callers read error bodies themselves (the typed client makes them GatewayErrors before decoding).
  ParseResult.fail(new ParseResult.Forbidden(ast, encoded, "error bodies are read by the client"))

/**
 * The error as the contract knows it: the spec's body with this class's
 * `type` and `code` values, under its status, for the OpenAPI document and
 * the endpoint's error type. The gateway middleware answers every failure
 * itself (Middleware.ts), so the encoding here mirrors what it sends.
 */
const wire = <A extends Failure>(cls: FailureClass<A>) => {
  const status = literal(fieldType(cls, "status"))
  const body = Schema.Struct({
    error: Schema.Struct({
      type: Schema.make<ErrorType>(fieldType(cls, "type")),
      code: Schema.make<string>(fieldType(cls, "code")),
      message: Schema.String,
      request_id: Schema.String
    })
  })
  return Schema.transformOrFail(body, Schema.declare((u): u is A => u instanceof cls), {
    strict: true,
    decode: (encoded, _, ast) => readOnly(encoded, ast),
    encode: toBody
  }).annotations(HttpApiSchema.annotations({ status: status as number }))
}

/** The errors an endpoint, a group or a middleware can answer with, for `.addError` or a middleware's `failure`. */
export const errors = <const Classes extends ReadonlyArray<FailureClass<any>>>(...classes: Classes) =>
  Schema.Union(...classes.map(wire)) as unknown as Schema.Schema<InstanceType<Classes[number]>, ErrorBody>

/** One error class for `.addError`. */
export const error = <A extends Failure>(cls: FailureClass<A>): Schema.Schema<A, ErrorBody> => wire(cls) as any

/**
 * Failures of the HTTP layer under the given statuses (reading a body: 400,
 * 413, 415), or a feature's failure that a handler sends with extra headers.
 */
export const httpFailures = (...statuses: ReadonlyArray<number>): Schema.Schema<HttpFailure, ErrorBody> =>
  Schema.Union(
    ...statuses.map((status) =>
      Schema.transformOrFail(
        ErrorBody,
        Schema.declare((u): u is HttpFailure => u instanceof HttpFailure && u.status === status),
        {
          strict: true,
          decode: (encoded, _, ast) => readOnly(encoded, ast),
          encode: toBody
        }
      ).annotations(HttpApiSchema.annotations({ status }))
    )
  ) as any

/** What reading a request body can fail with: malformed (400), too slow (408), too large (413), of the wrong type (415). */
export const BodyErrors = httpFailures(400, 408, 413, 415)

const NotFoundId = Symbol.for("media-gateway/PathIdNotFound")

/**
 * A path parameter that names one of a feature's resources, with the error
 * for an id that names nothing. The gateway middleware answers ids that
 * cannot even be stored (NUL, lone surrogates, malformed escapes) with it,
 * before a handler would send them to the database.
 */
export const ResourceId = (notFound: () => Failure) => Schema.String.annotations({ [NotFoundId]: notFound })

/** The not-found error a path parameter of `pathSchema` declares, if it does. */
export const notFoundOfParam = (pathSchema: Schema.Schema.Any, param: string): (() => Failure) | undefined => {
  const field = SchemaAST.getPropertySignatures(pathSchema.ast).find((p) => p.name === param)
  return field === undefined
    ? undefined
    : SchemaAST.getAnnotation<() => Failure>(field.type, NotFoundId).pipe((o) =>
      o._tag === "Some" ? o.value : undefined
    )
}
