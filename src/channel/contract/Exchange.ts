import type { Headers, HttpClient, HttpClientError, HttpClientRequest, HttpClientResponse } from "@effect/platform"
import { Duration, Effect } from "effect"
import type { GenerationError } from "./Generation.ts"

/** An upstream's answer read whole: its status, headers, text and the text as JSON (null when it is not). */
export interface UpstreamAnswer {
  readonly status: number
  readonly headers: Headers.Headers
  readonly text: string
  readonly body: unknown
}

const json = (text: string): unknown => {
  try {
    return JSON.parse(text)
  } catch {
    return null
  }
}

/**
 * Reads an answer whole. A body that breaks off fails with `lost()` when
 * given (after a create, the request was sent and may have run upstream, so
 * the adapter calls it ambiguous); otherwise it reads as empty, for
 * requests that change nothing upstream.
 */
export const readAnswer = <E = never>(
  response: HttpClientResponse.HttpClientResponse,
  lost?: () => E
): Effect.Effect<UpstreamAnswer, E> =>
  Effect.map(
    lost === undefined ? Effect.orElseSucceed(response.text, () => "") : Effect.mapError(response.text, lost),
    (text) => ({ status: response.status, headers: response.headers, text, body: json(text) })
  )

/**
 * One exchange with an upstream, bounded in time, its answer read whole:
 * what every adapter of a JSON protocol does per call. The adapter says
 * what a transport failure is (see Transport.ts: was it certainly not
 * sent?), what running out of time is, and what a body that breaks off is.
 */
export const exchange = (
  client: HttpClient.HttpClient,
  request: HttpClientRequest.HttpClientRequest,
  options: {
    /** For the log line of a transport failure, e.g. "a create to Ark". */
    readonly what: string
    readonly seconds: number
    readonly transport: (error: HttpClientError.HttpClientError) => GenerationError
    readonly timeout: () => GenerationError
    readonly lost?: (() => GenerationError) | undefined
  }
): Effect.Effect<UpstreamAnswer, GenerationError> =>
  client.execute(request).pipe(
    Effect.tapError((e) => Effect.logWarning(`${options.what} failed`).pipe(Effect.annotateLogs({ cause: e.message }))),
    Effect.mapError(options.transport),
    Effect.flatMap((response) => readAnswer(response, options.lost)),
    Effect.timeoutFail({ duration: Duration.seconds(options.seconds), onTimeout: options.timeout })
  )
