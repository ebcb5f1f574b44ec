import type { Headers, HttpClient, HttpClientError, HttpClientRequest, HttpClientResponse } from "@effect/platform"
import { Duration, Effect } from "effect"
import { type GenerationError, type UpstreamAnswerDetail, withUpstream } from "./Generation.ts"

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

const text = (value: unknown): string | undefined =>
  typeof value === "string" && value !== "" ? value : typeof value === "number" ? String(value) : undefined

/** The longest provider message kept for operators: enough to read, never a whole HTML page. */
const MESSAGE_LIMIT = 500

/**
 * The upstream's own status, code and message from an answer, in the
 * envelopes the providers use: `{ "error": { "code" | "status" | "type",
 * "message" } }` (OpenAI, Ark, Google, a chained gateway) or a top-level
 * `{ "code", "message" }` (Kling). A body that is not JSON keeps its first
 * characters as the message.
 */
export const answerDetail = (
  answer: Pick<UpstreamAnswer, "status" | "text"> & { readonly body?: unknown }
): UpstreamAnswerDetail => {
  const body = (answer.body === undefined ? json(answer.text) : answer.body) as Record<string, unknown> | null
  const envelope = body !== null && typeof body === "object" && typeof body.error === "object" && body.error !== null
    ? body.error as Record<string, unknown>
    : body !== null && typeof body === "object"
    ? body
    : undefined
  const code = envelope === undefined
    ? undefined
    : text(envelope.status) !== undefined && typeof envelope.code === "number"
    ? text(envelope.status) // Google: `code` repeats the HTTP status, `status` is the name (UNAUTHENTICATED)
    : text(envelope.code) ?? text(envelope.type) ?? text(envelope.status)
  const message = envelope === undefined ? answer.text.trim() : text(envelope.message) ?? text(body?.message)
  return { status: answer.status, code, message: message?.slice(0, MESSAGE_LIMIT) }
}

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
    Effect.mapError((e) => withUpstream(options.transport(e), { message: `${options.what} failed: ${e.message}` })),
    Effect.flatMap((response) => readAnswer(response, options.lost)),
    Effect.timeoutFail({
      duration: Duration.seconds(options.seconds),
      onTimeout: () =>
        withUpstream(options.timeout(), { message: `${options.what}: no answer within ${options.seconds} s` })
    })
  )

/** A warning of one channel's: the log line annotated with the channel's name and what else is given. */
export const channelWarning = (channel: string) => (message: string, annotations: Record<string, unknown> = {}) =>
  Effect.logWarning(message).pipe(Effect.annotateLogs({ channel, ...annotations }))

/** How much of a refusal's body goes into its log line. */
const LOGGED_BODY = 500

/**
 * The exchange an adapter makes with its provider, set up once per channel:
 * `exchange` with the provider named in its log lines, where running out of
 * time and a body that breaks off after the request was sent are both
 * `onTimeout` (the request's fate upstream is unknown), and every refusal
 * (by default an answer outside 2xx; `refused` says otherwise for a provider
 * that answers 200 with an error code) is logged as a warning of the channel
 * with its status and the start of its body, for operators.
 */
export const providerExchange = (
  client: HttpClient.HttpClient,
  options: {
    /** The provider as log lines name it: "a create to Ark", "Ark refused a create". */
    readonly provider: string
    readonly channel: string
    readonly transport: (error: HttpClientError.HttpClientError) => GenerationError
    readonly refused?: ((answer: UpstreamAnswer) => boolean) | undefined
  }
) => {
  const warn = channelWarning(options.channel)
  const refused = options.refused ?? ((answer: UpstreamAnswer) => answer.status < 200 || answer.status > 299)
  return (
    request: HttpClientRequest.HttpClientRequest,
    seconds: number,
    what: string,
    onTimeout: () => GenerationError
  ): Effect.Effect<UpstreamAnswer, GenerationError> =>
    exchange(client, request, {
      what: `${what} to ${options.provider}`,
      seconds,
      transport: options.transport,
      timeout: onTimeout,
      lost: onTimeout
    }).pipe(
      Effect.tap((answer) =>
        refused(answer)
          ? warn(`${options.provider} refused ${what}`, {
            upstream_status: answer.status,
            upstream_body: answer.text.slice(0, LOGGED_BODY)
          })
          : Effect.void
      )
    )
}
