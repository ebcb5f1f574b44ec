import { HttpServerRequest } from "@effect/platform"
import { Effect, Either, Fiber, Option, ParseResult, Schema, Stream } from "effect"
import { AppConfig } from "../AppConfig.ts"
import { concatBytes } from "../Digest.ts"
import { jsonProblem } from "../Text.ts"
import * as Errors from "./HttpFailure.ts"

/**
 * A body over the limit is drained up to this many times the limit so the
 * client still reads a clean 413 on its connection; past that the connection
 * is dropped instead of reading an unbounded upload.
 */
const DRAIN_FACTOR = 8

/**
 * Reads the raw request body, refusing more than `limit` bytes with 413. A
 * declared Content-Length over the limit is refused before any byte is read.
 */
export const readBytes = (limit: number) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const { limits } = yield* AppConfig
    const declared = Number(request.headers["content-length"] ?? NaN)
    if (declared > limit) return yield* Errors.payloadTooLarge(limit)
    const chunks: Array<Uint8Array> = []
    let size = 0
    const read = request.stream.pipe(
      Stream.mapError(unreadableBody),
      Stream.runForEachWhile((chunk) => {
        size += chunk.length
        if (size <= limit) chunks.push(chunk)
        return Effect.succeed(size <= limit * DRAIN_FACTOR)
      })
    )
    // Interrupting a read destroys the request and with it the socket, so a
    // client that stalled would never see its 408. The read runs on its own
    // fiber: at the deadline the 408 is answered (with Connection: close, which
    // ends the connection once written) and the read is stopped a moment later.
    const reader = yield* Effect.forkDaemon(read)
    const outcome = yield* Fiber.join(reader).pipe(
      Effect.timeoutOption(`${limits.body.read_timeout_s} seconds`),
      Effect.onInterrupt(() => Fiber.interruptFork(reader))
    )
    if (Option.isNone(outcome)) {
      yield* Effect.forkDaemon(Effect.delay(Fiber.interrupt(reader), "2 seconds"))
      return yield* bodyTimedOut()
    }
    if (size > limit) return yield* Errors.payloadTooLarge(limit)
    return concatBytes(chunks)
  })

/** 408 for a body not received within `limits.body.read_timeout_s`; the connection is closed after it. */
export const bodyTimedOut = () =>
  new Errors.HttpFailure({
    status: 408,
    type: "invalid_request_error",
    code: "request_timeout",
    message: "The request body was not received in time.",
    headers: { connection: "close" }
  })

/** 400 for a body the connection broke off (the client went away, a malformed chunk). */
export const unreadableBody = () => Errors.badRequest("invalid_request", "The request body could not be read.")

export const isJsonContentType = (value: string | undefined) =>
  value !== undefined && /^application\/json\s*(;|$)/i.test(value.trim())

/**
 * A JSON body's bytes as a value, or readJson's 400 `invalid_request`: bytes
 * that are not UTF-8 or not JSON, text the database cannot store or nesting
 * past MAX_JSON_DEPTH (src/platform/Text.ts).
 */
export const parseJsonBytes = (bytes: Uint8Array): Either.Either<unknown, Errors.HttpFailure> => {
  let json: unknown
  try {
    json = JSON.parse(new TextDecoder("utf-8", { fatal: true }).decode(bytes))
  } catch (e) {
    return Either.left(
      Errors.badRequest("invalid_request", `The request body is not valid JSON: ${(e as Error).message}`)
    )
  }
  const problem = jsonProblem(json)
  return problem === undefined ? Either.right(json) : Either.left(
    Errors.badRequest("invalid_request", `Invalid request body: ${problem.path || "the body"} ${problem.problem}.`)
  )
}

/** A schema failure as one readable line: `input.prompt: Expected string, actual 1`. */
export const formatParseError = (error: ParseResult.ParseError): string =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    .map((issue) => (issue.path.length ? `${issue.path.join(".")}: ${issue.message}` : issue.message))
    .join("; ")

/**
 * Reads a JSON body and decodes it strictly (unknown fields are errors).
 * Every failure is a spec error body: 415 for another Content-Type, 413 over
 * the size limit (`body.json_bytes` unless `maxBytes` is given), 400
 * `invalid_request` for bad JSON, text the database cannot store or nesting
 * past MAX_JSON_DEPTH (src/platform/Text.ts), or a schema mismatch.
 */
export const readJson = <A, I>(schema: Schema.Schema<A, I>, maxBytes?: number) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const { limits } = yield* AppConfig
    if (!isJsonContentType(request.headers["content-type"])) {
      return yield* Errors.unsupportedMediaType("The request body must be JSON with Content-Type: application/json.")
    }
    const json = yield* Effect.flatMap(readBytes(maxBytes ?? limits.body.json_bytes), parseJsonBytes)
    return yield* Schema.decodeUnknown(schema, { onExcessProperty: "error", errors: "all" })(json).pipe(
      Effect.mapError((e) => Errors.badRequest("invalid_request", `Invalid request body: ${formatParseError(e)}`))
    )
  })

/**
 * `readJson` for an optional body: a request without one (no Content-Type,
 * no length, not chunked) reads as null; any body is read and checked.
 */
export const readOptionalJson = <A, I>(schema: Schema.Schema<A, I>) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const length = request.headers["content-length"]
    const empty = request.headers["content-type"] === undefined &&
      (length === undefined || length === "0") && request.headers["transfer-encoding"] === undefined
    return empty ? null : yield* readJson(schema)
  })
