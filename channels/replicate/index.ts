import { HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect, Either, Redacted, Schema, Stream } from "effect"
import {
  answerDetail,
  type AsyncRunner,
  cancelledWith,
  type CancelOutcome,
  checkExchange,
  defineAdapter,
  type GenerationError,
  HttpUrl,
  type ImageJob,
  type ListedTask,
  type ListWindow,
  providerExchange,
  type ResultRef,
  SecretFromEnv,
  SubmitOutcome,
  type UpstreamAnswer,
  type UpstreamState,
  type VideoJob,
  withUpstream
} from "../../src/channel/contract/Adapter.ts"
import { replicateCallbacks } from "./Callbacks.ts"
import { ConfiguredModels, endpointsOf } from "./Configured.ts"
import { type ImageEndpoint, modelOf, routeLimits, routeProblem, versionOf, type VideoEndpoint } from "./Endpoints.ts"
import { failuresFor, fromCreateStatus, fromTransport, type Kind, throttleHintMs } from "./Failures.ts"
import { imageInput, videoInput } from "./Inputs.ts"
import { accountRequest, cancelRequest, createRequest, getRequest, listRequest, nextPageRequest } from "./Requests.ts"
import { chargeOf, listedOf, type Prediction, stateOf } from "./States.ts"

/**
 * `replicate`: video models of famS, famK and famV and an image model hosted
 * on Replicate, through its predictions API (docs/adapters/replicate.md).
 *
 * ```json
 * "replicate": { "adapter": "replicate", "credentials": { "api_token": { "env": "REPLICATE_API_TOKEN" } } }
 * ```
 *
 * - submit: `POST /models/{owner}/{name}/predictions`, or `POST /predictions`
 *   with `version` for `owner/name:version`; the input is built from the
 *   model's entry in Endpoints.ts (Inputs.ts). `Cancel-After` carries the
 *   channel's deadline, so Replicate stops a prediction we gave up on.
 * - poll: `GET /predictions/{id}`, one request per prediction (Replicate has
 *   no batch read); States.ts maps the statuses, `aborted` included.
 * - results: the output URLs, fetched at once without our token (Replicate
 *   deletes them after an hour) and re-hosted.
 * - cancel: `POST /predictions/{id}/cancel`; Replicate bills one that had
 *   started (States.ts, chargeOf).
 * - usage: `metrics.predict_time` for models priced by their running time;
 *   official models are priced per output, counted by the engine.
 * - list (reconciliation): `GET /predictions`, newest first, by its `next` pages.
 * - callbacks (`"callbacks": true`): `webhook` with
 *   `webhook_events_filter: ["completed"]`; the signed webhook only hastens
 *   the poll (Callbacks.ts).
 * - no find: Replicate has no idempotency key, so a create whose answer was
 *   lost cannot be told from another; the engine fails the task with its
 *   refund rather than run it twice.
 */

export const REPLICATE_BASE_URL = "https://api.replicate.com/v1"

/** Pages of the account's list a reconciliation reads at most: 5,000 predictions. */
const MAX_LIST_PAGES = 50

/** Predictions polled at once per poll call: Replicate allows 3000 reads a minute per account. */
const POLL_CONCURRENCY = 4

const Created = Schema.Struct({ id: Schema.NonEmptyString })

export default defineAdapter({
  name: "replicate",
  kinds: ["video", "image"],
  settings: Schema.Struct({
    base_url: Schema.optionalWith(HttpUrl, { default: () => REPLICATE_BASE_URL }),
    credentials: Schema.Struct({ api_token: SecretFromEnv, webhook_secret: Schema.optional(SecretFromEnv) }),
    /** The channel's own models beside the built-in ones (Configured.ts): a new family by configuration. */
    models: Schema.optional(ConfiguredModels)
  }),
  // The families declare their provider options; Endpoints.ts says which each model takes.
  providerOptions: {},
  checkRoute: (channel, route) =>
    routeProblem(endpointsOf(channel.settings.models), route.family, route.kind, route.upstreamModel),
  routeLimits: (channel, route) => routeLimits(endpointsOf(channel.settings.models), route.upstreamModel),
  callbacks: (channel) =>
    replicateCallbacks(
      channel.settings.base_url,
      channel.settings.credentials.api_token,
      channel.settings.credentials.webhook_secret
    ),
  check: (channel) =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const base = channel.settings.base_url
      return yield* checkExchange(
        client,
        accountRequest(base, Redacted.value(channel.settings.credentials.api_token)),
        {
          what: "GET /account",
          seconds: channel.settings.timeouts.poll_s,
          // Replicate's account object: its type and username.
          looksRight: (body) => typeof (body as { username?: unknown } | null)?.username === "string"
        }
      )
    }),
  make: (channel) =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const { base_url: base, credentials, timeouts } = channel.settings
      const token = Redacted.value(credentials.api_token)
      const log = channel.warn
      const endpoints = endpointsOf(channel.settings.models)

      const runner = <J extends VideoJob | ImageJob>(
        kind: Kind,
        inputOf: (job: J) => Either.Either<Record<string, unknown>, string>
      ): AsyncRunner<J> => {
        const f = failuresFor(kind)
        const exchange = providerExchange(client, {
          provider: "Replicate",
          channel: channel.name,
          transport: fromTransport(f)
        })

        const submit = (job: J) =>
          Effect.gen(function*() {
            const input = inputOf(job)
            if (Either.isLeft(input)) return yield* f.unsupported(input.left)
            const request = createRequest(
              base,
              token,
              job.upstreamModel,
              input.right,
              timeouts.deadline_s,
              job.callbackUrl
            )
            const answer = yield* exchange(request, timeouts.submit_s, "a create", f.ambiguous)
            if (answer.status < 200 || answer.status > 299) {
              return yield* withUpstream(
                fromCreateStatus(f, answer.status, answer.headers, answer.body),
                answerDetail(answer)
              )
            }
            const created = Schema.decodeUnknownOption(Created)(answer.body)
            // A 2xx without an id may still have created a prediction we cannot poll.
            if (created._tag === "None") return yield* f.ambiguous()
            return SubmitOutcome.Accepted({ upstreamId: created.value.id })
          })

        const pollFailed = () => f.pollFailed()
        const pollOne = (id: string) =>
          exchange(getRequest(base, token, id), timeouts.poll_s, "a prediction read", pollFailed).pipe(
            Effect.flatMap((answer): Effect.Effect<UpstreamState | undefined, GenerationError> => {
              if (answer.status === 200 && typeof answer.body === "object" && answer.body !== null) {
                return Effect.succeed(stateOf(f, answer.body as Prediction))
              }
              // A prediction Replicate does not know (another account's token, a typo) is left Unknown.
              if (answer.status === 404) return Effect.succeed(undefined)
              return Effect.fail(f.pollFailed(throttleHintMs(answer.headers, answer.body), answer.status === 429))
            }),
            // A poll's transport failure is never a reason to fail over: the prediction is already upstream.
            Effect.catchTag("GenerationError", (e) => e.ambiguous || e.notAccepted ? pollFailed() : Effect.fail(e))
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
              const response = yield* client.execute(HttpClientRequest.get(ref.url)).pipe(
                Effect.mapError(f.fetchBroken)
              )
              // replicate.delivery answers 404 (or 403/410 through a proxy) once the file is deleted.
              if (response.status === 403 || response.status === 404 || response.status === 410) {
                yield* log("a Replicate output has expired", { upstream_status: response.status })
                return yield* f.resultExpired()
              }
              if (response.status !== 200) return yield* f.fetchBroken()
              return response.stream.pipe(Stream.mapError(f.fetchBroken))
            })
          )

        const cancel = (id: string) =>
          Effect.gen(function*() {
            const answer = yield* exchange(cancelRequest(base, token, id), timeouts.poll_s, "a cancel", pollFailed)
            if (answer.status === 404) return "not_cancellable" as CancelOutcome
            if (answer.status !== 200) return yield* f.pollFailed(throttleHintMs(answer.headers, answer.body))
            const prediction = (answer.body ?? {}) as Prediction
            // A prediction that had already ended stays as it was; any other is stopped (or will not start).
            if (prediction.status === "succeeded" || prediction.status === "failed") return "not_cancellable"
            // Replicate bills a prediction cancelled after it started, for the time it ran; not one that never did.
            const charge = chargeOf({ ...prediction, status: "canceled" })
            return cancelledWith({ billed: charge.billed ?? false, usage: charge.usage })
          }).pipe(
            Effect.catchTag("GenerationError", (e) => e.ambiguous || e.notAccepted ? pollFailed() : Effect.fail(e))
          )

        /**
         * The predictions of the routed models created in the window: the account's list, newest first, read
         * until it passes the window's start (at most MAX_LIST_PAGES pages).
         */
        const list = (window: ListWindow) =>
          Effect.gen(function*() {
            const found: Array<ListedTask> = []
            let request: HttpClientRequest.HttpClientRequest | undefined = listRequest(base, token)
            for (let page = 0; request !== undefined && page < MAX_LIST_PAGES; page++) {
              const answer: UpstreamAnswer = yield* exchange(request, timeouts.poll_s, "a list", pollFailed)
              if (answer.status !== 200) {
                return yield* withUpstream(
                  f.pollFailed(throttleHintMs(answer.headers, answer.body)),
                  answerDetail(answer)
                )
              }
              const body = answer.body as { results?: unknown; next?: unknown } | null
              if (!Array.isArray(body?.results)) return yield* pollFailed()
              const listed = (body.results as ReadonlyArray<Prediction>).flatMap((p) => {
                const task = listedOf(p)
                return task === undefined ? [] : [{ task, prediction: p }]
              })
              for (const { prediction, task } of listed) {
                if (task.createdAt < window.from || task.createdAt >= window.to) continue
                if (window.upstreamModels.some((m) => isOf(prediction, m))) found.push(task)
              }
              // Newest first: a page that reaches before the window ends the reading.
              if (listed.some(({ task }) => task.createdAt < window.from)) break
              request = nextPageRequest(base, token, body.next)
            }
            return found as ReadonlyArray<ListedTask>
          })

        return { submit, poll, fetchResult, cancel, list }
      }

      /** Whether a prediction ran `upstreamModel` (`owner/name`, or `owner/name:version` for that version only). */
      const isOf = (prediction: Prediction, upstreamModel: string) => {
        const version = versionOf(upstreamModel)
        return prediction.model === modelOf(upstreamModel) && (version === undefined || prediction.version === version)
      }

      const endpoint = <E>(kind: Kind, upstreamModel: string): Either.Either<E, string> => {
        const known = endpoints.get(modelOf(upstreamModel))
        // Routes were checked at boot (checkRoute); this guards a config the check did not see.
        return known !== undefined && known.kind === kind
          ? Either.right(known as E)
          : Either.left(`This ${kind} model is not available on this service.`)
      }
      const video = runner<VideoJob>(
        "video",
        (job) => Either.flatMap(endpoint<VideoEndpoint>("video", job.upstreamModel), (e) => videoInput(job, e))
      )
      const image = runner<ImageJob>(
        "image",
        (job) => Either.flatMap(endpoint<ImageEndpoint>("image", job.upstreamModel), (e) => imageInput(job, e))
      )
      return { video, image }
    })
})
