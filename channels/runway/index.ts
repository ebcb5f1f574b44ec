import { HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect, Redacted, Schema, Stream } from "effect"
import {
  type AsyncRunner,
  type CancelOutcome,
  checkExchange,
  defineAdapter,
  type GenerationError,
  HttpUrl,
  providerExchange,
  type ResultRef,
  SecretFromEnv,
  SubmitOutcome,
  type UpstreamState,
  type VideoJob,
  withUpstream
} from "../../src/channel/contract/Adapter.ts"
import {
  ambiguous,
  fetchBroken,
  fromCreateStatus,
  fromTransport,
  pollFailed,
  refusedDelete,
  runwayDetail,
  unsupported
} from "./Failures.ts"
import { modelOf, routeLimits, routeProblem } from "./Models.ts"
import { createOf, endpoints } from "./Requests.ts"
import { type RunwayTask, stateOf } from "./States.ts"

/**
 * `runway`: video models on Runway's developer API (docs/adapters/runway.md),
 * any family whose route names a Runway model this adapter knows (Models.ts):
 *
 * ```json
 * "runway": { "adapter": "runway", "credentials": { "api_key": { "env": "RUNWAYML_API_SECRET" } } }
 * ```
 *
 * - submit: `POST /v1/text_to_video` without a frame, `POST /v1/image_to_video`
 *   with one (Requests.ts); every request carries the key and `X-Runway-Version`.
 * - poll: `GET /v1/tasks/{id}`, one request per task (Runway has no batch
 *   read); States.ts maps the statuses.
 * - results: the task's `output` URLs, fetched without the key and re-hosted;
 *   a link that lapsed is read again from a fresh poll.
 * - cancel: `DELETE /v1/tasks/{id}` of a task still pending, throttled or
 *   running (a task already ended is `not_cancellable`: the same DELETE would
 *   delete it, outputs and all).
 * - forget (data minimisation): `DELETE /v1/tasks/{id}` of an ended task.
 * - no find: nothing upstream knows our task id, so a create whose answer
 *   was lost fails the task with its refund rather than run it twice.
 * - no callbacks: the API has none for these tasks.
 */

export const RUNWAY_BASE_URL = "https://api.dev.runwayml.com"

/** Tasks read at once per poll call. */
const POLL_CONCURRENCY = 4

const Created = Schema.Struct({ id: Schema.NonEmptyString })

export default defineAdapter({
  name: "runway",
  kinds: ["video"],
  settings: Schema.Struct({
    base_url: Schema.optionalWith(HttpUrl, { default: () => RUNWAY_BASE_URL }),
    credentials: Schema.Struct({ api_key: SecretFromEnv })
  }),
  // The families declare their provider options; Models.ts says which each Runway model takes.
  providerOptions: {},
  checkRoute: (_channel, route) => routeProblem(route.kind, route.upstreamModel),
  routeLimits: (_channel, route) => routeLimits(route.upstreamModel),
  // The organization's credit balance and tier: free, changes nothing, and needs the key.
  check: (channel) =>
    Effect.flatMap(HttpClient.HttpClient, (client) =>
      checkExchange(
        client,
        endpoints(channel.settings.base_url, Redacted.value(channel.settings.credentials.api_key)).organization(),
        {
          what: "GET /v1/organization",
          seconds: channel.settings.timeouts.poll_s,
          looksRight: (body) => typeof (body as { creditBalance?: unknown } | null)?.creditBalance === "number"
        }
      )),
  make: (channel) =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const { base_url, credentials, timeouts } = channel.settings
      const api = endpoints(base_url, Redacted.value(credentials.api_key))
      const log = channel.warn
      const exchange = providerExchange(client, { provider: "Runway", channel: channel.name, transport: fromTransport })
      // A read's transport failure or time-out is never a reason to fail over: the task is already upstream.
      const read = (request: HttpClientRequest.HttpClientRequest, what: string) =>
        exchange(request, timeouts.poll_s, what, () => pollFailed()).pipe(
          Effect.catchTag("GenerationError", (e) => e.ambiguous || e.notAccepted ? pollFailed() : Effect.fail(e))
        )

      const submit = (job: VideoJob) =>
        Effect.gen(function*() {
          const model = modelOf(job.upstreamModel)
          // Routes were checked at boot (checkRoute); this guards a config the check did not see.
          if (model === undefined) return yield* unsupported("This video model is not available on this service.")
          const create = yield* createOf(job, model)
          const answer = yield* exchange(api.create(create), timeouts.submit_s, "a create", ambiguous)
          if (answer.status < 200 || answer.status > 299) {
            return yield* withUpstream(
              fromCreateStatus(answer.status, answer.headers, answer.body),
              runwayDetail(answer.status, answer.body, answer.text)
            )
          }
          const created = Schema.decodeUnknownOption(Created)(answer.body)
          // A 2xx without an id may still have created a task we cannot poll.
          if (created._tag === "None") return yield* ambiguous()
          return SubmitOutcome.Accepted({ upstreamId: created.value.id })
        })

      /** One task's state; undefined where Runway does not know it (deleted, another key's): Unknown. */
      const pollOne = (id: string) =>
        Effect.flatMap(
          read(api.task(id), "a task read"),
          (answer): Effect.Effect<UpstreamState | undefined, GenerationError> => {
            if (answer.status === 200 && typeof answer.body === "object" && answer.body !== null) {
              return Effect.succeed(stateOf(answer.body as RunwayTask))
            }
            if (answer.status === 404) return Effect.succeed(undefined)
            return Effect.fail(
              withUpstream(
                pollFailed(answer.headers, answer.status),
                runwayDetail(answer.status, answer.body, answer.text)
              )
            )
          }
        )

      const poll = (ids: ReadonlyArray<string>) =>
        Effect.forEach(ids, (id) => Effect.map(pollOne(id), (state) => [id, state] as const), {
          concurrency: POLL_CONCURRENCY
        }).pipe(
          Effect.map((pairs) => {
            const states = new Map<string, UpstreamState>()
            for (const [id, state] of pairs) if (state !== undefined) states.set(id, state)
            return states as ReadonlyMap<string, UpstreamState>
          })
        )

      const fetchResult = (ref: ResultRef) =>
        Stream.unwrap(
          Effect.gen(function*() {
            // Runway's output URLs are signed links of their own: the key is never sent there.
            const response = yield* client.execute(HttpClientRequest.get(ref.url)).pipe(Effect.mapError(fetchBroken))
            if (response.status !== 200) {
              // A lapsed link (24 to 48 hours) is not the end: the next poll reads the task again, with fresh URLs.
              yield* log("a Runway output could not be downloaded", { upstream_status: response.status })
              return yield* fetchBroken()
            }
            return response.stream.pipe(Stream.mapError(fetchBroken))
          })
        )

      /**
       * Cancels a task still waiting or running. The task is read first: one that
       * already ended is not cancellable, and the DELETE, which would delete it
       * with its outputs, is not sent.
       */
      const cancel = (id: string) =>
        Effect.gen(function*() {
          const state = yield* read(api.task(id), "a task read")
          if (state.status === 404) return "not_cancellable" as CancelOutcome
          if (state.status !== 200) {
            return yield* withUpstream(
              pollFailed(state.headers, state.status),
              runwayDetail(state.status, state.body, state.text)
            )
          }
          const status = (state.body as RunwayTask | null)?.status
          if (status !== "PENDING" && status !== "THROTTLED" && status !== "RUNNING") {
            return "not_cancellable" as CancelOutcome
          }
          const answer = yield* read(api.remove(id), "a cancel")
          if (answer.status >= 200 && answer.status <= 299) return "cancelled" as CancelOutcome
          if (answer.status === 404) return "not_cancellable" as CancelOutcome
          return yield* withUpstream(
            pollFailed(answer.headers, answer.status),
            runwayDetail(answer.status, answer.body, answer.text)
          )
        })

      /** Deletes an ended task upstream, its outputs with it (a 429 or 5xx is asked again later). */
      const forget = (id: string) =>
        Effect.gen(function*() {
          const answer = yield* read(api.remove(id), "a delete")
          if (answer.status >= 200 && answer.status <= 299) return "deleted" as const
          if (answer.status === 404) return "gone" as const
          const again = answer.status === 429 || answer.status >= 500
          return yield* withUpstream(
            again ? pollFailed(answer.headers, answer.status) : refusedDelete(),
            runwayDetail(answer.status, answer.body, answer.text)
          )
        })

      const video: AsyncRunner<VideoJob> = { submit, poll, fetchResult, cancel, forget }
      return { video }
    })
})
