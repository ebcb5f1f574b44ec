import { HttpClient, type HttpClientError, type HttpClientResponse } from "@effect/platform"
import { Effect, Either, ParseResult, Predicate, Schema } from "effect"
import { ErrorBody } from "../platform/http/ErrorContract.ts"
import { type ClientError, GatewayError, NetworkError } from "./Errors.ts"

/** `Retry-After` in seconds: delta seconds or an HTTP date; undefined when absent or unreadable. */
export const retryAfterSeconds = (response: HttpClientResponse.HttpClientResponse): number | undefined => {
  const raw = response.headers["retry-after"]
  if (raw === undefined || raw.trim() === "") return undefined
  if (/^\d+$/.test(raw.trim())) return Number(raw.trim())
  const at = Date.parse(raw)
  return Number.isNaN(at) ? undefined : Math.max(0, Math.ceil((at - Date.now()) / 1000))
}

const decodeErrorBody = Schema.decodeUnknownEither(Schema.parseJson(ErrorBody))

/**
 * A non-2xx answer as a `GatewayError`. The gateway always sends the spec's
 * error body; anything else (object storage's XML, a proxy's page) keeps its
 * status and a short excerpt, so the caller still sees what came back.
 */
export const errorFromResponse = (response: HttpClientResponse.HttpClientResponse) =>
  Effect.map(Effect.orElseSucceed(response.text, () => ""), (text) => {
    const retry_after = retryAfterSeconds(response)
    const body = decodeErrorBody(text)
    if (Either.isRight(body)) {
      const { error } = body.right
      return new GatewayError({
        status: response.status,
        ...error,
        ...(retry_after === undefined ? {} : { retry_after })
      })
    }
    const excerpt = text.replace(/\s+/g, " ").trim().slice(0, 200)
    return new GatewayError({
      status: response.status,
      type: "api_error",
      code: `http_${response.status}`,
      message: excerpt.length > 0 ? excerpt : `HTTP ${response.status}`,
      request_id: response.headers["x-request-id"] ?? null,
      ...(retry_after === undefined ? {} : { retry_after })
    })
  })

const networkError = (error: HttpClientError.RequestError) =>
  new NetworkError({
    url: error.request.url,
    message: String((error.cause as Error | undefined)?.message ?? error.message)
  })

/**
 * The HTTP client every call of the typed client goes through: a 2xx answer
 * passes, any other becomes a `GatewayError`, a failed connection a
 * `NetworkError`. No key and no base URL here: pre-signed and result URLs
 * use it as they are.
 */
export const gatewayHttp = (client: HttpClient.HttpClient): HttpClient.HttpClient.With<ClientError> =>
  HttpClient.transformResponse(client, (effect) =>
    effect.pipe(
      Effect.catchTag("RequestError", (e) => Effect.fail(networkError(e))),
      Effect.catchTag("ResponseError", (e) => Effect.flatMap(errorFromResponse(e.response), Effect.fail)),
      Effect.flatMap((response) =>
        response.status >= 200 && response.status < 300
          ? Effect.succeed(response)
          : Effect.flatMap(errorFromResponse(response), Effect.fail)
      )
    ))

const unexpected = (message: string) =>
  new GatewayError({ status: 0, type: "api_error", code: "unexpected_response", message, request_id: null })

/**
 * Narrows what an `HttpApiClient` call may fail with to the client's own
 * errors. The contract's error schemas never see an answer (non-2xx answers
 * are turned into `GatewayError`s before decoding), so what is left is a 2xx
 * body that does not match the contract, or a body that broke off.
 */
export const normalize = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, ClientError, R> =>
  Effect.catchAll(effect, (error: unknown) => {
    if (Predicate.isTagged(error, "GatewayError") || Predicate.isTagged(error, "NetworkError")) {
      return Effect.fail(error as unknown as ClientError)
    }
    if (ParseResult.isParseError(error)) {
      return Effect.fail(unexpected(`The answer does not match the contract: ${error.message}`))
    }
    if (Predicate.isTagged(error, "RequestError")) {
      return Effect.fail(networkError(error as HttpClientError.RequestError))
    }
    const message = Predicate.hasProperty(error, "message") ? String(error.message) : String(error)
    return Effect.fail(unexpected(message))
  })
