import { HttpBody, HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect, Redacted, Schema, Stream } from "effect"
import {
  answerDetail,
  type AsyncRunner,
  type CancelOutcome,
  checkExchange,
  defineAdapter,
  exchange as send,
  hasArray,
  HttpUrl,
  type ImageJob,
  type ResultRef,
  SecretFromEnv,
  SubmitOutcome,
  type VideoJob,
  withUpstream
} from "../../src/channel/contract/Adapter.ts"
import { ambiguous, FAILED_CODE, fromStatus, fromTransport, type Kind, transient } from "./Failures.ts"
import { cancelRequest, createRequest, imageBody, queryRequest, videoBody } from "./Requests.ts"
import { statesOf } from "./States.ts"

/**
 * `gateway`: another instance of this service as the upstream, so a fleet can
 * front a fleet (docs/adapters/gateway.md).
 *
 * ```json
 * "peer": { "adapter": "gateway", "base_url": "https://gw.example.com",
 *           "credentials": { "model_token": { "env": "PEER_SK" }, "resource_key": { "env": "PEER_AK" } },
 *           "concurrency": 50, "url_auth": "resource_api_key" }
 * ```
 *
 * - submit: `POST {base}/v1/{video,image}/tasks` with the `sk-` token, the
 *   unified request re-encoded (Requests.ts) and `Idempotency-Key` = our task id.
 * - poll: the spec's batch query `POST {base}/v1/{kind}/tasks/query` with the
 *   `ak_` key, up to 100 ids per call (States.ts maps the statuses).
 * - results: each result URL downloaded as is when signed, with the `ak_`
 *   key when its `url_auth` is `resource_api_key`; we re-host them.
 * - find: the same create again with the same Idempotency-Key. The upstream
 *   keeps the key per account and replays the original task instead of
 *   creating a second one, so after a time-out we learn the id of the task
 *   our lost request created (or create it, if the request never arrived) and
 *   the upstream never runs, nor charges, the task twice.
 * - cancel: the upstream's own `POST {base}/v1/{kind}/tasks/{id}/cancel`
 *   with the `ak_` key: 200 is cancelled there (refunded to us), 409
 *   `task_not_cancellable` (or a task it does not know) is not cancellable.
 */

const Created = Schema.Struct({ id: Schema.String })
/** The spec's batch query takes up to 100 ids. */
const QUERY_BATCH = 100

export default defineAdapter({
  name: "gateway",
  kinds: ["video", "image"],
  settings: Schema.Struct({
    base_url: HttpUrl,
    credentials: Schema.Struct({ model_token: SecretFromEnv, resource_key: SecretFromEnv })
  }),
  providerOptions: {},
  // The peer's model list with the model token: free, changes nothing, and needs the token.
  check: (channel) =>
    Effect.flatMap(HttpClient.HttpClient, (client) =>
      checkExchange(
        client,
        HttpClientRequest.get(`${channel.settings.base_url}/v1/models`).pipe(
          HttpClientRequest.bearerToken(Redacted.value(channel.settings.credentials.model_token))
        ),
        { what: "GET /v1/models", seconds: channel.settings.timeouts.poll_s, looksRight: hasArray("data") }
      )),
  make: (channel) =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const { base_url: base, credentials, timeouts } = channel.settings
      const modelToken = Redacted.value(credentials.model_token)
      const resourceKey = Redacted.value(credentials.resource_key)

      /** One exchange, bounded in time, its answer read whole; a time-out is ambiguous (it may have run). */
      const exchange = (kind: Kind, request: HttpClientRequest.HttpClientRequest, seconds: number, what: string) =>
        send(client, request, {
          what: `${what} to the upstream gateway`,
          seconds,
          transport: (e) => fromTransport(kind, e),
          timeout: () => ambiguous(kind)
        })

      const submitOf =
        <J extends VideoJob | ImageJob>(kind: Kind, encode: (job: J) => Parameters<typeof createRequest>[4]) =>
        (job: J) =>
          Effect.gen(function*() {
            const answer = yield* exchange(
              kind,
              createRequest(base, kind, modelToken, job.taskId, encode(job)),
              timeouts.submit_s,
              "a create"
            )
            if (answer.status < 200 || answer.status > 299) {
              yield* Effect.logWarning("the upstream gateway refused a create").pipe(Effect.annotateLogs({
                channel: channel.name,
                upstream_status: answer.status,
                upstream_body: answer.text.slice(0, 500)
              }))
              return yield* withUpstream(
                fromStatus(kind, answer.status, answer.headers, answer.body),
                answerDetail(answer)
              )
            }
            const created = Schema.decodeUnknownOption(Created)(answer.body)
            // A 2xx without an id cannot be polled; the create may have happened, so find decides.
            if (created._tag === "None") return yield* ambiguous(kind)
            return SubmitOutcome.Accepted({ upstreamId: created.value.id })
          })

      const poll = (kind: Kind) => (ids: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const answer = yield* exchange(
            kind,
            queryRequest(base, kind, resourceKey, ids),
            timeouts.poll_s,
            "a batch query"
          )
          if (answer.status !== 200) {
            return yield* withUpstream(
              fromStatus(kind, answer.status, answer.headers, answer.body),
              answerDetail(answer)
            )
          }
          return statesOf(answer.body, kind, base, FAILED_CODE[kind])
        })

      const fetchResult = (kind: Kind) => (ref: ResultRef) =>
        Stream.unwrap(
          Effect.gen(function*() {
            const plain = HttpClientRequest.get(ref.url)
            const request = ref.auth === "resource_api_key" ? HttpClientRequest.bearerToken(plain, resourceKey) : plain
            const response = yield* client.execute(request).pipe(Effect.mapError(() => transient(kind)))
            // An expired link or a vanished file: polled again, then failed at the deadline.
            if (response.status !== 200) return yield* transient(kind)
            return response.stream.pipe(Stream.mapError(() => transient(kind)))
          })
        )

      const cancel = (kind: Kind) => (id: string) =>
        Effect.gen(function*() {
          const answer = yield* exchange(kind, cancelRequest(base, kind, resourceKey, id), timeouts.poll_s, "a cancel")
          if (answer.status === 200) return "cancelled" as CancelOutcome
          if (answer.status === 409 || answer.status === 404) return "not_cancellable" as CancelOutcome
          return yield* fromStatus(kind, answer.status, answer.headers, answer.body)
        })

      const runnerOf = <J extends VideoJob | ImageJob>(
        kind: Kind,
        encode: (job: J) => Parameters<typeof createRequest>[4]
      ): AsyncRunner<J> => {
        const submit = submitOf<J>(kind, encode)
        return {
          submit,
          poll: poll(kind),
          pollBatch: QUERY_BATCH,
          fetchResult: fetchResult(kind),
          cancel: cancel(kind),
          // The same create, same key: the upstream answers with the task it already holds (see above).
          find: (job) =>
            submit(job).pipe(Effect.map((outcome) => (outcome._tag === "Accepted" ? outcome.upstreamId : undefined)))
        }
      }

      return {
        video: runnerOf<VideoJob>("video", (job) => HttpBody.unsafeJson(videoBody(job))),
        image: runnerOf<ImageJob>("image", imageBody)
      }
    })
})
