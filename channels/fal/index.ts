import { HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect, Either, Redacted, Schema, Stream } from "effect"
import {
  answerDetail,
  type AsyncRunner,
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
  type TaskKind,
  type UpstreamAnswer,
  UpstreamState,
  type VideoJob,
  withUpstream
} from "../../src/channel/contract/Adapter.ts"
import { FAL_JWKS_URL, falCallbacks } from "./Callbacks.ts"
import { ConfiguredEndpoints, endpointsOf } from "./Configured.ts"
import { appOf, appsOf, routeLimits, routeRefusal, siblingsOf } from "./Endpoints.ts"
import { failuresOf, upstreamOf } from "./Failures.ts"
import {
  cancelRequest,
  HISTORY_ENDPOINTS_PER_CALL,
  historyRequest,
  imageSubmit,
  isUpstreamId,
  resultRequest,
  statusRequest,
  type Submit,
  submitRequest,
  videoSubmit
} from "./Requests.ts"
import { listedOf, resultsOf, statusOf } from "./States.ts"

/**
 * `fal`: famS, famK and famV video models and image models on fal's queue
 * API (docs/adapters/fal.md).
 *
 * ```json
 * "fal": { "adapter": "fal", "credentials": { "api_key": { "env": "FAL_KEY" } }, "concurrency": 10 }
 * ```
 *
 * - a route's `upstream_model` is a fal endpoint this adapter knows
 *   (Endpoints.ts, as data); any other stops the boot, naming the known ones.
 * - submit: `POST {base}/{endpoint}` with `Authorization: Key …`; fal answers
 *   202 with `request_id` and the `status_url`, `response_url` and
 *   `cancel_url`, which drop the endpoint's subpath. The stored upstream id
 *   is the request's path under the queue (`{owner}/{alias}/requests/{id}`).
 * - poll: `GET …/status` per request; once COMPLETED, `GET …` (the result),
 *   where fal reports a failed run or a refused input (422): the input is
 *   validated when the request runs, not at submit.
 * - cancel: `PUT …/cancel` (202 CANCELLATION_REQUESTED; 400 ALREADY_COMPLETED).
 * - billing: fal bills successes only; their usage (seconds of video, images)
 *   is counted by the engine on the files it stores.
 * - list (reconciliation): the platform API's request history
 *   (`GET {platform_url}/models/requests/by-endpoint`) of the routed endpoints.
 * - no find: fal has no idempotency key nor a lookup by a field of ours, so
 *   a submit whose answer was lost fails the task with its refund rather than
 *   risk a second request.
 * - callbacks (`"callbacks": true`): `?fal_webhook=`; a verified webhook only
 *   hastens the poll (Callbacks.ts).
 * - results: `video.url` / `images[].url` on fal's CDN, downloaded without the
 *   key and re-hosted.
 * - check: the status of a request that cannot exist, under a known app: fal
 *   has no free read that succeeds, and answers this one 404 with a valid key.
 */

export const FAL_BASE_URL = "https://queue.fal.run"
export const FAL_PLATFORM_URL = "https://api.fal.ai/v1"

/** Pages of one history query a reconciliation reads at most: 5,000 requests. */
const MAX_HISTORY_PAGES = 50

/** The request id the check asks about: a UUID, as fal's are, that no submit returns. */
const NO_REQUEST = "00000000-0000-0000-0000-000000000000"

export default defineAdapter({
  name: "fal",
  kinds: ["video", "image"],
  settings: Schema.Struct({
    base_url: Schema.optionalWith(HttpUrl, { default: () => FAL_BASE_URL }),
    credentials: Schema.Struct({ api_key: SecretFromEnv }),
    /** Where fal's webhook keys are published (a test points it at a fake). */
    webhook_jwks_url: Schema.optionalWith(HttpUrl, { default: () => FAL_JWKS_URL }),
    /** fal's platform API, whose request history a reconciliation reads. */
    platform_url: Schema.optionalWith(HttpUrl, { default: () => FAL_PLATFORM_URL }),
    /** The channel's own endpoint lines beside the built-in ones (Configured.ts): a new family by configuration. */
    endpoints: Schema.optional(ConfiguredEndpoints)
  }),
  // The families' own provider options map onto endpoint fields (Endpoints.ts); fal needs no namespace of its own.
  providerOptions: {},
  callbacks: (channel) =>
    falCallbacks(channel.settings.webhook_jwks_url, appsOf(endpointsOf(channel.settings.endpoints))),
  checkRoute: (channel, route) =>
    routeRefusal(endpointsOf(channel.settings.endpoints), route.family, route.upstreamModel),
  routeLimits: (channel, route) => routeLimits(endpointsOf(channel.settings.endpoints), route.upstreamModel),
  check: (channel) =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const base = channel.settings.base_url
      // A well-formed request id no submit returns: fal checks the key before it looks the request up.
      const id = `${appsOf(endpointsOf(channel.settings.endpoints))[0]}/requests/${NO_REQUEST}`
      return yield* checkExchange(
        client,
        statusRequest(base, Redacted.value(channel.settings.credentials.api_key), id),
        {
          what: `GET /${id}/status`,
          seconds: channel.settings.timeouts.poll_s,
          expectedStatus: 404,
          // fal's JSON error body; a proxy's HTML 404 is not fal.
          looksRight: (body) => typeof (body as { detail?: unknown } | null)?.detail === "string"
        }
      )
    }),
  make: (channel) =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const { base_url: base, credentials, platform_url: platform, timeouts } = channel.settings
      const key = Redacted.value(credentials.api_key)
      const log = channel.warn
      const endpoints = endpointsOf(channel.settings.endpoints)

      const runner = <J extends VideoJob | ImageJob>(
        kind: TaskKind,
        submitOf: (job: J) => Either.Either<Submit, string>
      ): AsyncRunner<J> => {
        const failures = failuresOf(kind)

        const exchange = providerExchange(client, {
          provider: "fal",
          channel: channel.name,
          transport: failures.fromTransport
        })

        /**
         * The request's path under the queue, from the `response_url` fal
         * returned when it lies under our base URL (the key is never sent
         * elsewhere), else from the endpoint's app and the request id.
         */
        const upstreamIdOf = (endpoint: string, body: unknown) => {
          const requestId = (body as { request_id?: unknown } | null)?.request_id
          if (typeof requestId !== "string") return undefined
          const responseUrl = (body as { response_url?: unknown }).response_url
          if (typeof responseUrl === "string" && responseUrl.startsWith(`${base}/`)) {
            const path = responseUrl.slice(base.length + 1)
            if (isUpstreamId(path) && path.endsWith(`/requests/${requestId}`)) return path
          }
          const path = `${appOf(endpoint)}/requests/${requestId}`
          return isUpstreamId(path) ? path : undefined
        }

        const submit = (job: J) =>
          Effect.gen(function*() {
            const planned = submitOf(job)
            if (Either.isLeft(planned)) return yield* failures.unsupported(planned.left)
            const answer = yield* exchange(
              submitRequest(base, key, planned.right, job.callbackUrl),
              timeouts.submit_s,
              "a submit",
              failures.ambiguous
            )
            if (answer.status < 200 || answer.status > 299) {
              return yield* withUpstream(
                failures.fromSubmit(answer.status, answer.headers, answer.body),
                answerDetail(answer)
              )
            }
            const id = upstreamIdOf(planned.right.endpoint, answer.body)
            // A 2xx without a request id may still have queued a request we cannot follow.
            if (id === undefined) return yield* failures.ambiguous()
            return SubmitOutcome.Accepted({ upstreamId: id })
          })

        const pollFailed = () => failures.pollFailed()
        /** A status or result exchange; its transport failures are never a reason to fail over. */
        const query = (request: HttpClientRequest.HttpClientRequest, what: string) =>
          exchange(request, timeouts.poll_s, what, pollFailed).pipe(
            Effect.catchTag("GenerationError", (e) => e.ambiguous || e.notAccepted ? pollFailed() : Effect.fail(e))
          )

        const pollOne = (id: string): Effect.Effect<UpstreamState | undefined, GenerationError> =>
          Effect.gen(function*() {
            if (!isUpstreamId(id)) return undefined
            const status = yield* query(statusRequest(base, key, id), "a status query")
            // A request fal does not know: Unknown, polled until the deadline.
            if (status.status === 404) return undefined
            if (status.status !== 200 && status.status !== 202) {
              return yield* failures.pollFailed(status.headers, status.body, status.status)
            }
            const read = statusOf(status.body)
            switch (read._tag) {
              case "Queued":
                return UpstreamState.Pending({ progress: 0, answer: status.body })
              // fal reports no percentage: progress stays where it was.
              case "Running":
                return UpstreamState.Pending({ answer: status.body })
              case "Unknown":
                return UpstreamState.Unknown({ answer: status.body })
              case "Completed":
                break
            }
            // Done: only the result says whether it succeeded.
            const result = yield* query(resultRequest(base, key, id), "a result fetch")
            if (result.status === 200) {
              // A proxy's page served with 200 is not fal's result: asked again, not taken for "no output".
              if (typeof result.body !== "object" || result.body === null) return yield* pollFailed()
              // fal bills successes only; their units (seconds of video, images) are counted on the files stored.
              return UpstreamState.Succeeded({ results: resultsOf(result.body), answer: result.body, billed: true })
            }
            if (result.status === 429 || result.status === 408 || result.status >= 500 && !failedRun(status.body)) {
              return yield* failures.pollFailed(result.headers, result.body, result.status)
            }
            return UpstreamState.Failed({
              error: failures.fromResult(result.status, result.body),
              answer: result.body,
              billed: false
            })
          })

        const poll = (ids: ReadonlyArray<string>) =>
          Effect.forEach(ids, (id) => Effect.map(pollOne(id), (state) => [id, state] as const), { concurrency: 4 })
            .pipe(Effect.map((pairs) => {
              const states = new Map<string, UpstreamState>()
              for (const [id, state] of pairs) if (state !== undefined) states.set(id, state)
              return states as ReadonlyMap<string, UpstreamState>
            }))

        /** fal's request history of the routed endpoints (and their siblings) in the window, page by page. */
        const list = (window: ListWindow) =>
          Effect.gen(function*() {
            const routed = [...new Set(window.upstreamModels.flatMap(siblingsOf(endpoints)))]
            const found: Array<ListedTask> = []
            for (let i = 0; i < routed.length; i += HISTORY_ENDPOINTS_PER_CALL) {
              const batch = routed.slice(i, i + HISTORY_ENDPOINTS_PER_CALL)
              let cursor: string | undefined
              for (let page = 0; page < MAX_HISTORY_PAGES; page++) {
                const answer: UpstreamAnswer = yield* query(
                  historyRequest(platform, key, batch, window, cursor),
                  "a request history"
                )
                if (answer.status !== 200) {
                  return yield* withUpstream(
                    failures.pollFailed(answer.headers, answer.body, answer.status),
                    answerDetail(answer)
                  )
                }
                const body = answer.body as { items?: unknown; next_cursor?: unknown; has_more?: unknown } | null
                if (!Array.isArray(body?.items)) return yield* pollFailed()
                for (const item of body.items) {
                  const task = listedOf(item)
                  if (task !== undefined && task.createdAt >= window.from && task.createdAt < window.to) {
                    found.push(task)
                  }
                }
                if (body.has_more !== true || typeof body.next_cursor !== "string") break
                cursor = body.next_cursor
              }
            }
            return found as ReadonlyArray<ListedTask>
          })

        const cancel = (id: string) =>
          Effect.gen(function*() {
            if (!isUpstreamId(id)) return "not_cancellable" as CancelOutcome
            const answer = yield* query(cancelRequest(base, key, id), "a cancel")
            if (answer.status >= 200 && answer.status <= 299) return "cancelled" as CancelOutcome
            // 400 ALREADY_COMPLETED, 404 NOT_FOUND: nothing left to stop.
            if (answer.status === 400 || answer.status === 404) return "not_cancellable" as CancelOutcome
            return yield* failures.pollFailed(answer.headers, answer.body, answer.status)
          })

        const fetchResult = (ref: ResultRef) =>
          Stream.unwrap(
            Effect.gen(function*() {
              const response = yield* client.execute(HttpClientRequest.get(ref.url)).pipe(
                Effect.mapError(failures.fetchBroken)
              )
              // fal's CDN answers 403/404/410 once a file is gone.
              if (response.status === 403 || response.status === 404 || response.status === 410) {
                yield* log("a fal result file has expired", { upstream_status: response.status })
                return yield* failures.resultExpired()
              }
              if (response.status !== 200) return yield* failures.fetchBroken()
              return response.stream.pipe(Stream.mapError(failures.fetchBroken))
            })
          )

        return { submit, poll, fetchResult, cancel, list }
      }

      return {
        video: runner<VideoJob>("video", videoSubmit(endpoints)),
        image: runner<ImageJob>("image", imageSubmit(endpoints))
      }
    })
})

/** A status that already says the run failed (`error` / `error_type`): a 5xx result is then its failure, not a blip. */
const failedRun = (status: unknown) => {
  const detail = upstreamOf(undefined, status)
  return detail.message !== undefined || detail.code !== undefined
}
