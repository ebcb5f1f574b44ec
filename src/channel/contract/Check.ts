import type { HttpClient, HttpClientRequest } from "@effect/platform"
import { Duration, Effect } from "effect"
import { answerDetail, readAnswer } from "./Exchange.ts"
import type { UpstreamAnswerDetail } from "./Generation.ts"

/**
 * What a channel check found (an adapter's `check`, Adapter.ts):
 * `model_not_found_upstream` when the upstream answers, takes the
 * credentials, and does not serve a model the channel's routes name (a
 * retired or mistyped `upstream_model`), which every task routed there
 * would meet.
 */
export interface ChannelCheck {
  readonly result: "ok" | "credentials_refused" | "unreachable" | "unexpected_answer" | "model_not_found_upstream"
  /** Words for the operator: what was asked and what came back (never a secret). */
  readonly detail: string
  /** The upstream's own answer, when there was one. */
  readonly upstream?: UpstreamAnswerDetail | undefined
}

const said = (detail: UpstreamAnswerDetail) =>
  [detail.code, detail.message].filter((s) => s !== undefined && s !== "").join(": ")

/**
 * One check exchange, as every adapter of an HTTP protocol makes it: a
 * transport failure or no answer in time is `unreachable`, 401 and 403 are
 * `credentials_refused` (with the upstream's own code and message), a 2xx
 * (or the `expectedStatus`) whose body `looksRight` is `ok`, anything else
 * `unexpected_answer`. Never fails.
 */
export const checkExchange = (
  client: HttpClient.HttpClient,
  request: HttpClientRequest.HttpClientRequest,
  options: {
    /** What was asked, for the operator: e.g. "GET /models". */
    readonly what: string
    readonly seconds: number
    readonly looksRight: (body: unknown) => boolean
    /**
     * The status of the expected answer when it is not a 2xx: a read of
     * something that cannot exist, where the provider has no free read that
     * succeeds, expects its 404.
     */
    readonly expectedStatus?: number | undefined
    /** Besides 401 and 403: an answer that says the credentials were refused (a protocol's own code). */
    readonly refused?: ((status: number, body: unknown) => boolean) | undefined
  }
): Effect.Effect<ChannelCheck> =>
  client.execute(request).pipe(
    Effect.flatMap((response) => readAnswer(response)),
    Effect.timeoutFail({
      duration: Duration.seconds(options.seconds),
      onTimeout: () => ({ message: `no answer within ${options.seconds} s` })
    }),
    Effect.map((answer): ChannelCheck => {
      const upstream = answerDetail(answer)
      const words = said(upstream)
      const detail = `${options.what}: HTTP ${answer.status}${words === "" ? "" : ` ${words}`}`
      if (answer.status === 401 || answer.status === 403 || options.refused?.(answer.status, answer.body)) {
        return { result: "credentials_refused", detail, upstream }
      }
      const expected = options.expectedStatus === undefined
        ? answer.status >= 200 && answer.status <= 299
        : answer.status === options.expectedStatus
      if (expected && options.looksRight(answer.body)) {
        return { result: "ok", detail: `${options.what}: HTTP ${answer.status}` }
      }
      return {
        result: "unexpected_answer",
        detail: `${detail}${words === "" ? ` ${answer.text.slice(0, 200)}` : ""}`,
        upstream
      }
    }),
    Effect.catchAll((e) =>
      Effect.succeed<ChannelCheck>({ result: "unreachable", detail: `${options.what}: ${e.message}` })
    )
  )

/** A JSON object with an array under `key` (a list answer). */
export const hasArray = (key: string) => (body: unknown): boolean =>
  typeof body === "object" && body !== null && Array.isArray((body as Record<string, unknown>)[key])
