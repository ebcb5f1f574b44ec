import { HttpClient, type HttpClientError, HttpClientRequest } from "@effect/platform"
import { Duration, Effect, Redacted, Schema, Stream } from "effect"
import {
  answerDetail,
  checkExchange,
  defineAdapter,
  exchange as send,
  type GenerationError,
  hasArray,
  HttpUrl,
  readAnswer,
  type ResultRef,
  retryHintMs,
  SecretFromEnv,
  SubmitOutcome,
  type UpstreamAnswer,
  UpstreamState,
  type VideoJob,
  type VideoUpstream,
  withUpstream
} from "../../src/channel/contract/Adapter.ts"
import { ambiguous, busy, fromContentStatus, fromCreateStatus, fromTransport, refusedDelete } from "./Failures.ts"
import { endpoints } from "./Requests.ts"
import { stateOf, type VideoObject } from "./States.ts"
import { unsupported } from "./Unsupported.ts"

/**
 * `openai-videos`: the OpenAI Videos API (`/v1/videos`,
 * docs/adapters/openai-videos.md) as a channel for video models. OpenAI's own
 * Sora API is shut down; the protocol lives on in relays (Azure, new-api and
 * other gateways) in front of many models, so the answers are read tolerantly
 * (States.ts).
 *
 * ```json
 * "relay": { "adapter": "openai-videos", "base_url": "https://relay.example.com/v1",
 *            "credentials": { "api_key": { "env": "RELAY_API_KEY" } } }
 * ```
 *
 * - submit: `POST {base}/videos` (JSON, Requests.ts), after refusing what
 *   the protocol cannot carry (Unsupported.ts).
 * - poll: the protocol has no batch query, so `GET {base}/videos/{id}` per
 *   id, a few at a time, all within the poll time-out: answers that arrive
 *   are used, the rest are asked again next time.
 * - results: `GET {base}/videos/{id}/content` with the key; the engine
 *   re-hosts the bytes.
 * - forget (data minimisation): `DELETE {base}/videos/{id}` of a finished
 *   video deletes it upstream, content and all; 404 once it is gone.
 * - no `find`: nothing upstream knows our task id, so a create whose answer
 *   was lost fails the task with its refund (SubmitUpstream.ts), never a
 *   second create that the operator could pay twice.
 */

/** Status requests in flight at once per poll call: enough for a pass of 100 ids, gentle on a relay. */
const POLL_CONCURRENCY = 8

/** The upstream's id of a created video; new-api relays also answer `task_id` (its older interface). */
const idOf = (body: unknown) => {
  const { id, task_id } = (body ?? {}) as { id?: unknown; task_id?: unknown }
  return typeof id === "string" && id !== "" ? id : typeof task_id === "string" && task_id !== "" ? task_id : undefined
}

export default defineAdapter({
  name: "openai-videos",
  kinds: ["video"],
  settings: Schema.Struct({
    base_url: HttpUrl,
    credentials: Schema.Struct({ api_key: SecretFromEnv })
  }),
  providerOptions: {},
  // The video list, one item: free, changes nothing, and needs the key (relays may have no model list).
  check: (channel) =>
    Effect.flatMap(HttpClient.HttpClient, (client) =>
      checkExchange(
        client,
        HttpClientRequest.get(`${channel.settings.base_url}/videos`, {
          urlParams: { limit: "1" }
        }).pipe(HttpClientRequest.bearerToken(Redacted.value(channel.settings.credentials.api_key))),
        { what: "GET /videos (one item)", seconds: channel.settings.timeouts.poll_s, looksRight: hasArray("data") }
      )),
  make: (channel) =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const { base_url, credentials, timeouts } = channel.settings
      const apiKey = Redacted.value(credentials.api_key)
      const api = endpoints(base_url)
      // Inside the engine's own bound on one poll call, so the answers that did arrive are kept.
      const pollBudget = Duration.millis(Math.max(500, timeouts.poll_s * 800))

      /** For operators only: the upstream's status, request id and the start of its body. */
      const logRefusal = (what: string, response: Pick<UpstreamAnswer, "status" | "headers">, text: string) =>
        Effect.logWarning(`the upstream refused ${what}`).pipe(Effect.annotateLogs({
          channel: channel.name,
          upstream_status: response.status,
          upstream_request_id: response.headers["x-request-id"] ?? null,
          upstream_body: text.slice(0, 500)
        }))
      const logTransport = (what: string) => (e: HttpClientError.HttpClientError) =>
        Effect.logWarning(`${what} to the upstream failed`).pipe(
          Effect.annotateLogs({
            channel: channel.name,
            cause: String((e.cause as Error | undefined)?.message ?? e.message)
          })
        )

      const submit = (job: VideoJob) =>
        Effect.gen(function*() {
          const refusal = unsupported(job)
          if (refusal !== undefined) return yield* Effect.fail(refusal)
          const answer = yield* send(client, api.create(apiKey, job), {
            what: "a create to the upstream",
            seconds: timeouts.submit_s,
            transport: fromTransport,
            timeout: ambiguous,
            // A body that breaks off was sent and maybe run upstream: ambiguous, like a time-out.
            lost: ambiguous
          })
          if (answer.status < 200 || answer.status > 299) {
            yield* logRefusal("a create", answer, answer.text)
            return yield* Effect.fail(
              withUpstream(fromCreateStatus(answer.status, answer.headers, answer.body), answerDetail(answer))
            )
          }
          const id = idOf(answer.body)
          if (id === undefined) {
            // Maybe created, but it cannot be polled: the engine fails the task with its refund.
            yield* logRefusal("a create (an answer without an id)", answer, answer.text)
            return yield* Effect.fail(ambiguous())
          }
          return SubmitOutcome.Accepted({ upstreamId: id })
        })

      /** One video's state, or why it could not be read this time (`throttled`: the upstream asked us to wait). */
      const pollOne = (id: string) =>
        Effect.gen(function*() {
          const response = yield* client.execute(api.retrieve(apiKey, id)).pipe(
            Effect.mapError((e) => ({ error: busy(), throttled: false, cause: e.message }))
          )
          const { body, text } = yield* readAnswer(response)
          if (response.status === 200) {
            return typeof body === "object" && body !== null
              ? stateOf(body as VideoObject, api.contentUrl(id))
              : UpstreamState.Unknown({ answer: { http_status: 200, body: text.slice(0, 200) } })
          }
          // Not (or not yet) known there: polled again until the deadline rather than failed on sight.
          if (response.status === 404) {
            return UpstreamState.Unknown({
              answer: { http_status: 404, error: (body as { error?: unknown } | null)?.error ?? null }
            })
          }
          return yield* Effect.fail({
            error: busy(retryHintMs(response.headers, body), response.status === 429),
            throttled: response.status === 429,
            cause: `HTTP ${response.status}: ${text.slice(0, 200)}`
          })
        })

      const poll = (ids: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const states = new Map<string, UpstreamState>()
          const failures: Array<{ error: GenerationError; throttled: boolean; cause: string }> = []
          yield* Effect.forEach(
            ids,
            (id) =>
              // Once throttled, the rest are not asked: the whole batch waits as long as the upstream asked.
              Effect.suspend(() =>
                failures.some((f) => f.throttled) ? Effect.void : pollOne(id).pipe(
                  Effect.match({ onSuccess: (state) => states.set(id, state), onFailure: (f) => failures.push(f) })
                )
              ),
            { concurrency: POLL_CONCURRENCY, discard: true }
          ).pipe(Effect.timeoutOption(pollBudget))
          if (failures.length > 0) {
            yield* Effect.logWarning("status requests to the upstream failed").pipe(
              Effect.annotateLogs({ channel: channel.name, failed: failures.length, first: failures[0]!.cause })
            )
          }
          const throttled = failures.find((f) => f.throttled)
          if (throttled !== undefined) return yield* Effect.fail(throttled.error)
          if (states.size === 0 && failures.length > 0) return yield* Effect.fail(failures[0]!.error)
          return states
        })

      const fetchResult = (ref: ResultRef) =>
        Stream.unwrap(
          Effect.gen(function*() {
            const plain = HttpClientRequest.get(ref.url).pipe(HttpClientRequest.accept("application/binary"))
            // The key goes only where States.ts said it is needed: this upstream's own `/content`.
            const request = ref.auth === "api_key" ? HttpClientRequest.bearerToken(plain, apiKey) : plain
            const response = yield* client.execute(request).pipe(
              Effect.tapError(logTransport("a download")),
              Effect.mapError(() => busy())
            )
            if (response.status !== 200) {
              yield* logRefusal("a download", response, yield* Effect.orElseSucceed(response.text, () => ""))
              return yield* Effect.fail(fromContentStatus(response.status, response.headers))
            }
            return response.stream.pipe(Stream.mapError(() => busy()))
          })
        )

      /** Deletes a finished video upstream (a 429 or a 5xx is asked again later; any other refusal is final). */
      const forget = (id: string) =>
        Effect.gen(function*() {
          const answer = yield* send(client, api.remove(apiKey, id), {
            what: "a delete to the upstream",
            seconds: timeouts.poll_s,
            transport: () => busy(),
            timeout: () => busy(),
            lost: () => busy()
          })
          if (answer.status >= 200 && answer.status <= 299) return "deleted" as const
          if (answer.status === 404) return "gone" as const
          yield* logRefusal("a delete", answer, answer.text)
          const again = answer.status === 429 || answer.status >= 500
          return yield* Effect.fail(
            withUpstream(
              again ? busy(retryHintMs(answer.headers, answer.body), answer.status === 429) : refusedDelete(),
              answerDetail(answer)
            )
          )
        })

      const video: VideoUpstream = { submit, poll, fetchResult, forget }
      return { video }
    })
})
