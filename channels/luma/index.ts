import { HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect, Either, Redacted, Schema, Stream } from "effect"
import {
  answerDetail,
  cancelledWith,
  type CancelOutcome,
  checkExchange,
  defineAdapter,
  type GenerationError,
  HttpUrl,
  type ListedTask,
  type ListWindow,
  providerExchange,
  type ResultRef,
  SecretFromEnv,
  SubmitOutcome,
  type UpstreamState,
  type VideoJob,
  type VideoUpstream,
  withUpstream
} from "../../src/channel/contract/Adapter.ts"
import { lumaCallbacks } from "./Callbacks.ts"
import {
  ambiguous,
  busy,
  fetchBroken,
  fromCreate,
  fromTransport,
  refusedDelete,
  resultExpired,
  upstreamOf
} from "./Failures.ts"
import { routeLimits, routeRefusal } from "./Models.ts"
import { createBody, endpoints, isGenerationId } from "./Requests.ts"
import { type Generation, listedOf, stateOf, usageIn } from "./States.ts"

/**
 * `luma`: video models of any family on Luma AI's Dream Machine API
 * (docs/adapters/luma.md), a route's `upstream_model` naming Luma's model
 * (`ray-2`, `ray-flash-2`; Models.ts).
 *
 * ```json
 * "luma": { "adapter": "luma", "credentials": { "api_key": { "env": "LUMAAI_API_KEY" } } }
 * ```
 *
 * - submit: `POST {base}/generations/video` (JSON, Requests.ts), answered
 *   201 with the generation object; its `id` is the upstream id.
 * - poll: Luma has no batch query, so `GET {base}/generations/{id}` per id,
 *   a few at a time; `queued`/`dreaming` wait, `completed` has
 *   `assets.video`, `failed` its `failure_reason` (States.ts).
 * - results: `assets.video` on Luma's CDN, downloaded without the key.
 * - cancel: Luma has no cancel; a generation still `queued` is deleted
 *   (`DELETE {base}/generations/{id}`), so it never runs for us. One already
 *   dreaming is not cancellable (deleting it would only lose the video).
 * - forget (data minimisation): `DELETE {base}/generations/{id}` of a
 *   finished generation; 404 once it is gone.
 * - list (reconciliation): `GET {base}/generations`, page by page.
 * - no find: nothing of a Luma generation names our task, so a create whose
 *   answer was lost fails the task with its refund, never a second create.
 * - callbacks (`"callbacks": true`): `callback_url`; Luma signs nothing, so a
 *   callback only hastens the poll of the generation it names (Callbacks.ts).
 * - check: `GET {base}/credits`, free and harmless.
 */

export const LUMA_BASE_URL = "https://api.lumalabs.ai/dream-machine/v1"

/** Status requests in flight at once per poll call. */
const POLL_CONCURRENCY = 4
/** Generations one list page asks for, and the most pages a reconciliation reads. */
const LIST_PAGE = 100
const MAX_LIST_PAGES = 50

const asGeneration = (body: unknown): Generation | undefined =>
  typeof body === "object" && body !== null && !Array.isArray(body) ? body as Generation : undefined

export default defineAdapter({
  name: "luma",
  kinds: ["video"],
  settings: Schema.Struct({
    base_url: Schema.optionalWith(HttpUrl, { default: () => LUMA_BASE_URL }),
    credentials: Schema.Struct({ api_key: SecretFromEnv })
  }),
  providerOptions: {},
  callbacks: () => lumaCallbacks,
  checkRoute: (_channel, route) => routeRefusal(route.upstreamModel),
  routeLimits: (_channel, route) => routeLimits(route.upstreamModel),
  check: (channel) =>
    Effect.flatMap(HttpClient.HttpClient, (client) =>
      checkExchange(
        client,
        endpoints(channel.settings.base_url, Redacted.value(channel.settings.credentials.api_key)).credits(),
        {
          what: "GET /credits",
          seconds: channel.settings.timeouts.poll_s,
          looksRight: (body) => typeof (body as { credit_balance?: unknown } | null)?.credit_balance === "number"
        }
      )),
  make: (channel) =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const { base_url, credentials, timeouts } = channel.settings
      const api = endpoints(base_url, Redacted.value(credentials.api_key))
      const log = channel.warn
      const exchange = providerExchange(client, { provider: "Luma", channel: channel.name, transport: fromTransport })

      const submit = (job: VideoJob) =>
        Effect.gen(function*() {
          const body = createBody(job)
          if (Either.isLeft(body)) return yield* Effect.fail(body.left)
          const answer = yield* exchange(api.create(body.right), timeouts.submit_s, "a create", ambiguous)
          if (answer.status < 200 || answer.status > 299) {
            return yield* Effect.fail(
              withUpstream(fromCreate(answer.status, answer.headers, answer.body), answerDetail(answer))
            )
          }
          const id = asGeneration(answer.body)?.id
          // A 2xx without an id may still have created a generation we cannot follow.
          if (typeof id !== "string" || !isGenerationId(id)) return yield* Effect.fail(ambiguous())
          return SubmitOutcome.Accepted({ upstreamId: id })
        })

      /** A read that changes nothing upstream: any transport failure or time-out is asked again later. */
      const read = (request: HttpClientRequest.HttpClientRequest, what: string) =>
        exchange(request, timeouts.poll_s, what, () => busy()).pipe(
          Effect.catchTag("GenerationError", (e) => e.ambiguous || e.notAccepted ? Effect.fail(busy()) : Effect.fail(e))
        )

      const pollOne = (id: string): Effect.Effect<UpstreamState | undefined, GenerationError> =>
        Effect.gen(function*() {
          if (!isGenerationId(id)) return undefined
          const answer = yield* read(api.get(id), "a status query")
          // A generation Luma does not know (yet, or any more): Unknown, polled until the deadline.
          if (answer.status === 404) return undefined
          const generation = asGeneration(answer.body)
          // A proxy's page served with 200 is not Luma's answer: asked again.
          if (answer.status !== 200 || generation === undefined) {
            return yield* Effect.fail(busy(answer.headers, answer.body, answer.status))
          }
          return stateOf(generation)
        })

      const poll = (ids: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const states = new Map<string, UpstreamState>()
          const failures: Array<GenerationError> = []
          yield* Effect.forEach(
            ids,
            (id) =>
              // Once throttled, the rest are not asked: the whole batch waits as long as Luma asked.
              Effect.suspend(() =>
                failures.some((f) => f.throttled === true) ? Effect.void : pollOne(id).pipe(
                  Effect.match({
                    onSuccess: (state) => void (state !== undefined && states.set(id, state)),
                    onFailure: (e) => void failures.push(e)
                  })
                )
              ),
            { concurrency: POLL_CONCURRENCY, discard: true }
          )
          const throttled = failures.find((f) => f.throttled === true)
          if (throttled !== undefined) return yield* Effect.fail(throttled)
          if (states.size === 0 && failures.length > 0) return yield* Effect.fail(failures[0]!)
          return states as ReadonlyMap<string, UpstreamState>
        })

      const fetchResult = (ref: ResultRef) =>
        Stream.unwrap(
          Effect.gen(function*() {
            // Luma's CDN serves the file to anyone with its URL: the key is never sent there.
            const response = yield* client.execute(HttpClientRequest.get(ref.url)).pipe(
              Effect.mapError(() => fetchBroken())
            )
            if (response.status === 403 || response.status === 404 || response.status === 410) {
              yield* log("a Luma video is gone from its CDN", { upstream_status: response.status })
              return yield* Effect.fail(resultExpired())
            }
            if (response.status !== 200) return yield* Effect.fail(fetchBroken())
            return response.stream.pipe(Stream.mapError(() => fetchBroken()))
          })
        )

      /** `DELETE /generations/{id}`: 204 deleted, 404 gone; a 429 or 5xx is asked again later, anything else final. */
      const remove = (id: string) =>
        Effect.gen(function*() {
          const answer = yield* read(api.remove(id), "a delete")
          if (answer.status >= 200 && answer.status <= 299) return "deleted" as const
          if (answer.status === 404) return "gone" as const
          if (answer.status === 429 || answer.status >= 500) {
            return yield* Effect.fail(busy(answer.headers, answer.body, answer.status))
          }
          return yield* Effect.fail(withUpstream(refusedDelete(), upstreamOf(answer.status, answer.body)))
        })

      const forget = (id: string) => isGenerationId(id) ? remove(id) : Effect.succeed("gone" as const)

      /**
       * Luma has no cancel: a generation still `queued` is deleted, so it
       * never runs for us. Luma documents no refund for a deleted generation
       * (it pre-charges each create and refunds failed ones), so the cancel
       * is counted as billed for the operator. A generation already dreaming
       * or finished is not cancellable: the task goes on.
       */
      const cancel = (id: string): Effect.Effect<CancelOutcome, GenerationError> =>
        Effect.gen(function*() {
          if (!isGenerationId(id)) return "not_cancellable" as const
          const answer = yield* read(api.get(id), "a status query")
          if (answer.status === 404) return "not_cancellable" as const
          const generation = asGeneration(answer.body)
          if (answer.status !== 200 || generation === undefined) {
            return yield* Effect.fail(busy(answer.headers, answer.body, answer.status))
          }
          if (generation.state !== "queued") return "not_cancellable" as const
          const removed = yield* remove(id)
          return removed === "gone"
            ? "not_cancellable" as const
            : cancelledWith({ billed: true, usage: usageIn(generation) })
        })

      /** Luma's own record of the account's generations in the window, of the routed models, page by page. */
      const list = (window: ListWindow) =>
        Effect.gen(function*() {
          const found: Array<ListedTask> = []
          const models = new Set(window.upstreamModels)
          for (let page = 0; page < MAX_LIST_PAGES; page++) {
            const answer = yield* read(api.list(LIST_PAGE, page * LIST_PAGE), "a generation list")
            const body = answer.body as { generations?: unknown; has_more?: unknown } | null
            if (answer.status !== 200 || !Array.isArray(body?.generations)) {
              return yield* Effect.fail(busy(answer.headers, answer.body, answer.status))
            }
            for (const item of body.generations) {
              const task = asGeneration(item) === undefined ? undefined : listedOf(item as Generation)
              if (
                task !== undefined && task.createdAt >= window.from && task.createdAt < window.to &&
                task.model !== undefined && models.has(task.model)
              ) found.push(task)
            }
            if (body.has_more !== true || body.generations.length === 0) break
          }
          return found as ReadonlyArray<ListedTask>
        })

      const video: VideoUpstream = { submit, poll, fetchResult, cancel, forget, list }
      return { video }
    })
})
