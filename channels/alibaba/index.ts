import { HttpClient, HttpClientRequest } from "@effect/platform"
import { Duration, Effect, Either, Redacted, Schema, Stream } from "effect"
import {
  answerDetail,
  type CancelOutcome,
  checkExchange,
  defineAdapter,
  type GenerationError,
  hasArray,
  HttpUrl,
  providerExchange,
  type ResultRef,
  SecretFromEnv,
  SubmitOutcome,
  type UpstreamState,
  type VideoJob,
  type VideoUpstream,
  withUpstream
} from "../../src/channel/contract/Adapter.ts"
import {
  ambiguous,
  codeOf,
  fetchBroken,
  fromCreateStatus,
  fromReadStatus,
  fromTransport,
  resultExpired,
  unsupported
} from "./Failures.ts"
import { routeLimits, routeRefusal } from "./Models.ts"
import { createOf, endpoints, TASKS_PATH } from "./Requests.ts"
import { stateOf, type TaskAnswer } from "./States.ts"

/**
 * `alibaba`: famW (Wan) on Alibaba Cloud Model Studio's DashScope video
 * synthesis (docs/adapters/alibaba.md):
 *
 * ```json
 * "alibaba": { "adapter": "alibaba", "credentials": { "api_key": { "env": "DASHSCOPE_API_KEY" } } }
 * ```
 *
 * - submit: `POST /api/v1/services/aigc/video-generation/video-synthesis`
 *   with `X-DashScope-Async: enable`; the line of the route's
 *   `upstream_model` (Models.ts) gives the text-to-video or the
 *   image-to-video model, by whether the request has a first frame
 *   (Requests.ts).
 * - poll: `GET /api/v1/tasks/{task_id}` per task (DashScope has no query of
 *   many ids at once), a few at a time.
 * - cancel: `POST /api/v1/tasks/{task_id}/cancel`, which DashScope takes
 *   for a PENDING task only: a running or finished one is not cancellable.
 * - no `find`: nothing upstream knows our task id, so a create whose answer
 *   was lost fails the task with its refund, never a second create.
 * - results: `output.video_url`, an OSS link kept 24 hours, fetched without
 *   our key and re-hosted.
 */

/** Singapore (international); the Chinese mainland one is `https://dashscope.aliyuncs.com`. */
export const DASHSCOPE_BASE_URL = "https://dashscope-intl.aliyuncs.com"

/** Status requests in flight at once per poll call: DashScope's task query allows 20 per second per account. */
const POLL_CONCURRENCY = 4

const Settings = Schema.Struct({
  base_url: Schema.optionalWith(HttpUrl, { default: () => DASHSCOPE_BASE_URL }),
  credentials: Schema.Struct({ api_key: SecretFromEnv }),
  /** `parameters.watermark` of every create ("AI-generated" in a corner); DashScope's default (none) when absent. */
  watermark: Schema.optional(Schema.Boolean)
})

type Failure = { readonly error: GenerationError; readonly throttled: boolean }

export default defineAdapter({
  name: "alibaba",
  kinds: ["video"],
  settings: Settings,
  // The famW plugin declares `provider_options.famW` (negative_prompt, seed, prompt_extend); none of our own.
  providerOptions: {},
  checkRoute: (_channel, route) => routeRefusal(route.family, route.kind, route.upstreamModel),
  routeLimits: (_channel, route) => routeLimits(route.upstreamModel),
  // The account's task list, one item: free, changes nothing, and needs the key.
  check: (channel) =>
    Effect.flatMap(HttpClient.HttpClient, (client) =>
      checkExchange(
        client,
        endpoints(channel.settings.base_url, Redacted.value(channel.settings.credentials.api_key)).list(),
        {
          what: `GET ${TASKS_PATH} (one item)`,
          seconds: channel.settings.timeouts.poll_s,
          looksRight: hasArray("data")
        }
      )),
  make: (channel) =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const { base_url, credentials, timeouts, watermark } = channel.settings
      const api = endpoints(base_url, Redacted.value(credentials.api_key))
      const log = channel.warn
      const send = providerExchange(client, { provider: "DashScope", channel: channel.name, transport: fromTransport })
      // Inside the engine's own bound on one poll call, so the answers that did arrive are kept.
      const pollBudget = Duration.millis(Math.max(500, timeouts.poll_s * 800))
      const ok = (status: number) => status >= 200 && status <= 299

      const submit = (job: VideoJob) =>
        Effect.gen(function*() {
          const create = createOf(job, watermark)
          if (Either.isLeft(create)) return yield* unsupported(create.left)
          const answer = yield* send(api.create(create.right.body), timeouts.submit_s, "a create", ambiguous)
          if (!ok(answer.status)) {
            return yield* withUpstream(
              fromCreateStatus(answer.status, answer.headers, answer.body),
              answerDetail(answer)
            )
          }
          const id = (answer.body as { output?: { task_id?: unknown } } | null)?.output?.task_id
          // A success without an id may still have created a task, which nothing can find: refunded, never resent.
          if (typeof id !== "string" || id === "") return yield* ambiguous()
          return SubmitOutcome.Accepted({ upstreamId: id })
        })

      const readFailed = () => fromReadStatus(0, {}, null)

      /** One task's state, or why it could not be read this time. */
      const pollOne = (id: string): Effect.Effect<UpstreamState, Failure> =>
        send(api.task(id), timeouts.poll_s, "a status request", readFailed).pipe(
          // A poll's transport failure is never a reason to fail over: the task is already upstream.
          Effect.mapError((): Failure => ({ error: readFailed(), throttled: false })),
          Effect.flatMap((answer) => {
            if (ok(answer.status) && typeof answer.body === "object" && answer.body !== null) {
              return Effect.succeed(stateOf(answer.body as TaskAnswer))
            }
            const error = withUpstream(fromReadStatus(answer.status, answer.headers, answer.body), answerDetail(answer))
            return Effect.fail<Failure>({ error, throttled: answer.status === 429 })
          })
        )

      const poll = (ids: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const states = new Map<string, UpstreamState>()
          const failures: Array<Failure> = []
          yield* Effect.forEach(
            ids,
            (id) =>
              // Once throttled, the rest are not asked: the whole batch waits as long as DashScope asked.
              Effect.suspend(() =>
                failures.some((f) => f.throttled) ? Effect.void : pollOne(id).pipe(
                  Effect.match({ onSuccess: (state) => states.set(id, state), onFailure: (f) => failures.push(f) })
                )
              ),
            { concurrency: POLL_CONCURRENCY, discard: true }
          ).pipe(Effect.timeoutOption(pollBudget))
          const throttled = failures.find((f) => f.throttled)
          if (throttled !== undefined) return yield* throttled.error
          if (states.size === 0 && failures.length > 0) return yield* failures[0]!.error
          return states as ReadonlyMap<string, UpstreamState>
        })

      const fetchResult = (ref: ResultRef) =>
        Stream.unwrap(
          Effect.gen(function*() {
            // The link is signed for OSS: our DashScope key is never sent there.
            const response = yield* client.execute(HttpClientRequest.get(ref.url)).pipe(Effect.mapError(fetchBroken))
            // OSS answers 403 for a lapsed signature, 404 once the object is gone.
            if (response.status === 403 || response.status === 404 || response.status === 410) {
              yield* log("a DashScope result link has expired", { upstream_status: response.status })
              return yield* resultExpired()
            }
            if (response.status !== 200) return yield* fetchBroken()
            return response.stream.pipe(Stream.mapError(fetchBroken))
          })
        )

      const cancel = (id: string) =>
        Effect.gen(function*() {
          const answer = yield* send(api.cancel(id), timeouts.poll_s, "a cancel", readFailed).pipe(
            Effect.mapError(() => readFailed())
          )
          if (ok(answer.status)) return "cancelled" as CancelOutcome
          // 429, 5xx, a refused key: a failure to try again. Anything else (UnsupportedOperation: the task is
          // not PENDING any more; an id DashScope does not know) is DashScope refusing the cancel.
          if (answer.status === 429 || answer.status >= 500 || answer.status === 401 || answer.status === 403) {
            return yield* withUpstream(fromReadStatus(answer.status, answer.headers, answer.body), answerDetail(answer))
          }
          yield* log("DashScope did not cancel a task", { upstream_code: codeOf(answer.body) ?? null })
          return "not_cancellable" as CancelOutcome
        })

      const video: VideoUpstream = { submit, poll, fetchResult, cancel }
      return { video }
    })
})
