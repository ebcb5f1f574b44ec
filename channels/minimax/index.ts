import { HttpClient, HttpClientRequest } from "@effect/platform"
import { Duration, Effect, Either, Redacted, Schema, Stream } from "effect"
import {
  type AsyncRunner,
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
import { minimaxCallbacks } from "./Callbacks.ts"
import {
  ambiguous,
  codeOf,
  detailOf,
  fetchBroken,
  fromCreate,
  fromTransport,
  isAccepted,
  isAuthRefused,
  isTaskAnswer,
  pollFailed,
  resultExpired,
  unsupported
} from "./Failures.ts"
import { routeLimits, routeRefusal } from "./Models.ts"
import { createBody, endpoints } from "./Requests.ts"
import { type QueryAnswer, stateOf } from "./States.ts"

/**
 * `minimax`: famH (Hailuo-like) video models on MiniMax's video generation
 * API (docs/adapters/minimax.md).
 *
 * ```json
 * "minimax": { "adapter": "minimax", "credentials": { "api_key": { "env": "MINIMAX_API_KEY" } } }
 * ```
 *
 * - a route's `upstream_model` is a MiniMax model this adapter knows
 *   (Models.ts); any other stops the start, and each model's limits
 *   (durations, 16:9, silent, a last frame or not) keep requests it cannot
 *   take off its routes.
 * - submit: `POST /v1/video_generation` (Requests.ts) → `task_id`.
 * - poll: no batch query, so `GET /v1/query/video_generation?task_id=` per
 *   task, a few at a time within the poll time-out.
 * - results: a success names a `file_id`; `fetchResult` asks
 *   `GET /v1/files/retrieve?file_id=` for its `download_url` and streams
 *   that (without the key), and the engine re-hosts it.
 * - no cancel, no find: the API has neither a cancel nor a lookup by our id,
 *   so a create whose answer was lost fails the task with its refund.
 * - callbacks (`"callbacks": true`): `callback_url` is sent; MiniMax first
 *   posts a `challenge`, echoed in the callback route's answer, then status
 *   updates, each of which only makes its task due for a poll now
 *   (Callbacks.ts).
 * - errors come as HTTP 200 with `base_resp.status_code` ≠ 0 (Failures.ts).
 */

/** MiniMax's global API; `region: "china"` takes the mainland one. */
export const MINIMAX_BASE_URL = "https://api.minimax.io"
export const MINIMAX_CHINA_BASE_URL = "https://api.minimaxi.com"

/** Status requests in flight at once per poll call. */
const POLL_CONCURRENCY = 4

const Settings = Schema.Struct({
  /** Which of MiniMax's hosts: `global` (api.minimax.io) or `china` (api.minimaxi.com, mainland accounts). */
  region: Schema.optionalWith(Schema.Literal("global", "china"), { default: () => "global" as const }),
  /** Overrides the region's host (a proxy in front of MiniMax). */
  base_url: Schema.optional(HttpUrl),
  credentials: Schema.Struct({ api_key: SecretFromEnv })
})
type Settings = typeof Settings.Type

const baseOf = (settings: Settings) =>
  settings.base_url ?? (settings.region === "china" ? MINIMAX_CHINA_BASE_URL : MINIMAX_BASE_URL)

export default defineAdapter({
  name: "minimax",
  kinds: ["video"],
  settings: Settings,
  // The famH plugin declares `provider_options.famH` (prompt_optimizer, fast_pretreatment); MiniMax needs no more.
  providerOptions: {},
  checkRoute: (_channel, route) => routeRefusal(route),
  routeLimits: (_channel, route) => routeLimits(route),
  // MiniMax signs nothing: every channel reads its callbacks the same way.
  callbacks: () => minimaxCallbacks,
  // The file list of one purpose: free, changes nothing, and needs the key.
  check: (channel) =>
    Effect.flatMap(HttpClient.HttpClient, (client) =>
      checkExchange(
        client,
        endpoints(baseOf(channel.settings), Redacted.value(channel.settings.credentials.api_key)).list(),
        {
          what: "GET /v1/files/list",
          seconds: channel.settings.timeouts.poll_s,
          looksRight: (body) => {
            const files = (body as { files?: unknown } | null)?.files
            return codeOf(body) === 0 && (files === undefined || files === null || Array.isArray(files))
          },
          refused: (_, body) => isAuthRefused(codeOf(body))
        }
      )),
  make: (channel) =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const { timeouts } = channel.settings
      const api = endpoints(baseOf(channel.settings), Redacted.value(channel.settings.credentials.api_key))
      const log = channel.warn
      const send = providerExchange(client, {
        provider: "MiniMax",
        channel: channel.name,
        transport: fromTransport,
        refused: (answer) => !isAccepted(answer) && !isTaskAnswer(answer)
      })
      // Inside the engine's own bound on one poll call, so the answers that did arrive are kept.
      const pollBudget = Duration.millis(Math.max(500, timeouts.poll_s * 800))

      const submit = (job: VideoJob) =>
        Effect.gen(function*() {
          const body = createBody(job)
          if (Either.isLeft(body)) return yield* unsupported(body.left)
          const answer = yield* send(api.create(body.right), timeouts.submit_s, "a create", ambiguous)
          if (!isAccepted(answer)) return yield* fromCreate(answer)
          const id = (answer.body as { task_id?: unknown }).task_id
          // A success without an id may still have created a task, which nothing can find: ambiguous.
          if (typeof id !== "string" || id === "") return yield* ambiguous()
          return SubmitOutcome.Accepted({ upstreamId: id })
        })

      /** One task's state; undefined when MiniMax does not know it (yet); a failure to ask again later. */
      const pollOne = (id: string) =>
        Effect.gen(function*() {
          const answer = yield* send(api.query(id), timeouts.poll_s, "a query", () => pollFailed()).pipe(
            // A poll's transport failure is never a reason to fail over: the task is already upstream.
            Effect.mapError((e) => (e.ambiguous || e.notAccepted ? pollFailed() : e))
          )
          // A task's answer, whatever its `base_resp`: a `Fail` carries the reason's code there (1027…).
          if (isTaskAnswer(answer)) return stateOf(answer.body as QueryAnswer, api.retrieveUrl)
          // 2013 for an id MiniMax does not know: polled again until the deadline rather than failed on sight.
          if (codeOf(answer.body) === 2013) return undefined
          return yield* Effect.fail(withUpstream(pollFailed(answer), detailOf(answer)))
        })

      const poll = (ids: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const states = new Map<string, UpstreamState>()
          const failures: Array<GenerationError> = []
          yield* Effect.forEach(
            ids,
            (id) =>
              // Once throttled, the rest are not asked: the whole batch waits as long as MiniMax asked.
              Effect.suspend(() =>
                failures.some((f) => f.throttled) ? Effect.void : pollOne(id).pipe(
                  Effect.match({
                    onSuccess: (state) => state === undefined ? undefined : states.set(id, state),
                    onFailure: (f) => failures.push(f)
                  })
                )
              ),
            { concurrency: POLL_CONCURRENCY, discard: true }
          ).pipe(Effect.timeoutOption(pollBudget))
          const throttled = failures.find((f) => f.throttled)
          if (throttled !== undefined) return yield* Effect.fail(throttled)
          if (states.size === 0 && failures.length > 0) return yield* Effect.fail(failures[0]!)
          return states as ReadonlyMap<string, UpstreamState>
        })

      /** The file's `download_url`, asked of the files API with the key. */
      const downloadUrlOf = (ref: ResultRef) =>
        Effect.gen(function*() {
          const answer = yield* send(api.retrieve(ref.url), timeouts.poll_s, "a file retrieve", () => fetchBroken())
            .pipe(Effect.mapError(() => fetchBroken()))
          if (!isAccepted(answer)) return yield* fetchBroken()
          const url = (answer.body as { file?: { download_url?: unknown } }).file?.download_url
          if (typeof url !== "string" || !/^https?:\/\//.test(url)) {
            yield* log("a MiniMax file without a download_url", { upstream_body: answer.text.slice(0, 500) })
            return yield* fetchBroken()
          }
          return url
        })

      const fetchResult = (ref: ResultRef) =>
        Stream.unwrap(
          Effect.gen(function*() {
            const url = yield* downloadUrlOf(ref)
            // The download link is signed by MiniMax's storage: our key never goes there.
            const response = yield* client.execute(HttpClientRequest.get(url)).pipe(Effect.mapError(fetchBroken))
            if (response.status === 403 || response.status === 404 || response.status === 410) {
              yield* log("a MiniMax result link has expired", { upstream_status: response.status })
              return yield* resultExpired()
            }
            if (response.status !== 200) return yield* fetchBroken()
            return response.stream.pipe(Stream.mapError(fetchBroken))
          })
        )

      const video: AsyncRunner<VideoJob> = { submit, poll, fetchResult }
      return { video }
    })
})
