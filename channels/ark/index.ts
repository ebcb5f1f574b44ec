import { HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect, Either, Redacted, Schema, Stream } from "effect"
import {
  answerDetail,
  type AsyncRunner,
  type CancelOutcome,
  checkExchange,
  defineAdapter,
  hasArray,
  HttpUrl,
  type ListedTask,
  type ListWindow,
  providerExchange,
  type ResultRef,
  SecretFromEnv,
  SubmitOutcome,
  type UpstreamState,
  type VideoJob,
  withUpstream
} from "../../src/channel/contract/Adapter.ts"
import { arkCallbacks } from "./Callbacks.ts"
import {
  ambiguous,
  fetchBroken,
  fromCreateStatus,
  fromPollStatus,
  fromTransport,
  resultExpired,
  unsupported
} from "./Failures.ts"
import {
  createBody,
  createRequest,
  deleteRequest,
  IDS_PER_LIST_CALL,
  LIST_PAGE_SIZE,
  listBatches,
  listRequest,
  modelListRequest
} from "./Requests.ts"
import { listedOf, statesOf, statusIn } from "./States.ts"

/**
 * `ark`: famS (Seedance) video models on BytePlus ModelArk or Volcengine Ark
 * content-generation tasks (docs/adapters/ark.md).
 *
 * ```json
 * "byteplus": { "adapter": "ark", "credentials": { "api_key": { "env": "ARK_API_KEY" } },
 *               "concurrency": 20 }
 * ```
 *
 * - submit: `POST {base}/contents/generations/tasks` (Requests.ts maps the
 *   request); the answer is only the task id.
 * - poll: the list endpoint with repeated `filter.task_ids`, many tasks per
 *   call (States.ts maps the statuses).
 * - results: `content.video_url`, a pre-signed link valid 24 hours, fetched
 *   without our key (a second signature would break it) and re-hosted.
 * - callbacks (`"callbacks": true`): `callback_url` is sent and Ark's
 *   unsigned task-object callbacks only hasten the poll (Callbacks.ts).
 * - cancel: `DELETE` of the task, only while a list shows it `queued`: Ark
 *   refuses a running one (not cancellable, it goes on), and a DELETE of a
 *   finished one would delete its record, result and all.
 * - usage: a finished task's `usage.completion_tokens`, what Ark bills
 *   (States.ts); a failed task is not billed.
 * - list (reconciliation): the list endpoint by `filter.model`, page by page.
 * - no find: Ark has no idempotency key and keeps no field of ours on a
 *   task (docs/adapters/ark.md, Failures), so a create whose answer is lost cannot be told apart
 *   from a neighbour's task of the same model; the engine fails it with its
 *   refund rather than create it twice.
 */

/** BytePlus ModelArk, the international host; Volcengine's is `https://ark.cn-beijing.volces.com/api/v3`. */
export const BYTEPLUS_BASE_URL = "https://ark.ap-southeast.bytepluses.com/api/v3"
const Created = Schema.Struct({ id: Schema.NonEmptyString })

/** Pages of one model's list read by a reconciliation at most: 10,000 tasks of a week. */
const MAX_LIST_PAGES = 20

export default defineAdapter({
  name: "ark",
  kinds: ["video"],
  settings: Schema.Struct({
    base_url: Schema.optionalWith(HttpUrl, { default: () => BYTEPLUS_BASE_URL }),
    credentials: Schema.Struct({ api_key: SecretFromEnv })
  }),
  // The famS plugin declares `provider_options.famS` (seed, camera_fixed); Ark needs no namespace of its own.
  providerOptions: {},
  callbacks: () => arkCallbacks,
  // Ark bills video by its tokens, which every finished task's answer counts.
  usageUnits: { video: ["token"] },
  // The task list, one item: free, changes nothing, and needs the key.
  check: (channel) =>
    Effect.flatMap(HttpClient.HttpClient, (client) =>
      checkExchange(
        client,
        HttpClientRequest.get(`${channel.settings.base_url}/contents/generations/tasks`, {
          urlParams: { page_num: "1", page_size: "1" }
        }).pipe(HttpClientRequest.bearerToken(Redacted.value(channel.settings.credentials.api_key))),
        {
          what: "GET /contents/generations/tasks (one item)",
          seconds: channel.settings.timeouts.poll_s,
          looksRight: hasArray("items")
        }
      )),
  make: (channel) =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const { base_url: base, credentials, timeouts } = channel.settings
      const apiKey = Redacted.value(credentials.api_key)
      const log = channel.warn
      const exchange = providerExchange(client, { provider: "Ark", channel: channel.name, transport: fromTransport })

      const submit = (job: VideoJob) =>
        Effect.gen(function*() {
          const body = createBody(job, timeouts.deadline_s)
          if (Either.isLeft(body)) return yield* unsupported(body.left)
          const answer = yield* exchange(
            createRequest(base, apiKey, body.right),
            timeouts.submit_s,
            "a create",
            ambiguous
          )
          if (answer.status < 200 || answer.status > 299) {
            return yield* withUpstream(
              fromCreateStatus(answer.status, answer.headers, answer.body),
              answerDetail(answer)
            )
          }
          const created = Schema.decodeUnknownOption(Created)(answer.body)
          // A 2xx without an id may still have created a task we cannot poll.
          if (created._tag === "None") return yield* ambiguous()
          return SubmitOutcome.Accepted({ upstreamId: created.value.id })
        })

      const pollFailed = () => fromPollStatus({}, null)
      const poll = (ids: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const states = new Map<string, UpstreamState>()
          for (const batch of listBatches(ids)) {
            const answer = yield* exchange(listRequest(base, apiKey, batch), timeouts.poll_s, "a list", pollFailed)
            if (answer.status !== 200) {
              return yield* withUpstream(fromPollStatus(answer.headers, answer.body), answerDetail(answer))
            }
            const found = statesOf(answer.body)
            if (found === undefined) return yield* pollFailed()
            for (const [id, state] of found) states.set(id, state)
          }
          return states as ReadonlyMap<string, UpstreamState>
        }).pipe(
          // A poll's transport failure is never a reason to fail over: the task is already upstream.
          Effect.catchTag("GenerationError", (e) => e.ambiguous || e.notAccepted ? pollFailed() : Effect.fail(e))
        )

      const fetchResult = (ref: ResultRef) =>
        Stream.unwrap(
          Effect.gen(function*() {
            const response = yield* client.execute(HttpClientRequest.get(ref.url)).pipe(Effect.mapError(fetchBroken))
            // TOS answers 403 for a lapsed signature, 404 once the object is gone.
            if (response.status === 403 || response.status === 404 || response.status === 410) {
              yield* log("an Ark result link has expired", { upstream_status: response.status })
              return yield* resultExpired()
            }
            if (response.status !== 200) return yield* fetchBroken()
            return response.stream.pipe(Stream.mapError(fetchBroken))
          })
        )

      const cancel = (id: string) =>
        Effect.gen(function*() {
          const listed = yield* exchange(listRequest(base, apiKey, [id]), timeouts.poll_s, "a list", pollFailed)
          if (listed.status !== 200) return yield* fromPollStatus(listed.headers, listed.body)
          if (statusIn(listed.body, id) !== "queued") return "not_cancellable" as CancelOutcome
          const answer = yield* exchange(deleteRequest(base, apiKey, id), timeouts.poll_s, "a delete", pollFailed)
          if (answer.status >= 200 && answer.status <= 299) return "cancelled" as CancelOutcome
          // Started (or ended) since the list: Ark refuses, and the task goes on to its end.
          if (answer.status === 400 || answer.status === 404 || answer.status === 409) {
            return "not_cancellable" as CancelOutcome
          }
          return yield* fromPollStatus(answer.headers, answer.body)
        })

      /** Deletes a finished task's record at Ark (a DELETE of a terminal task removes it; 404 once gone). */
      const forget = (id: string) =>
        Effect.gen(function*() {
          const answer = yield* exchange(deleteRequest(base, apiKey, id), timeouts.poll_s, "a delete", pollFailed)
          if (answer.status >= 200 && answer.status <= 299) return "deleted" as const
          if (answer.status === 404) return "gone" as const
          return yield* fromPollStatus(answer.headers, answer.body)
        })

      /**
       * The account's tasks of the routed models created in the window, page by page (Ark lists the last 7
       * days, in no documented order, so every page is read), with the usage each reports.
       */
      const list = (window: ListWindow) =>
        Effect.gen(function*() {
          const found: Array<ListedTask> = []
          for (const model of window.upstreamModels) {
            for (let page = 1; page <= MAX_LIST_PAGES; page++) {
              const answer = yield* exchange(
                modelListRequest(base, apiKey, model, page),
                timeouts.poll_s,
                "a list",
                pollFailed
              )
              if (answer.status !== 200) {
                return yield* withUpstream(fromPollStatus(answer.headers, answer.body), answerDetail(answer))
              }
              const listed = listedOf(answer.body)
              if (listed === undefined) return yield* pollFailed()
              found.push(...listed.tasks.filter((t) => t.createdAt >= window.from && t.createdAt < window.to))
              if (listed.tasks.length < LIST_PAGE_SIZE || page * LIST_PAGE_SIZE >= listed.total) break
            }
          }
          return found
        })

      // One list call asks about a whole engine batch (fewer ids per call only when long ids fill its query string).
      const video: AsyncRunner<VideoJob> = {
        submit,
        poll,
        pollBatch: IDS_PER_LIST_CALL,
        fetchResult,
        cancel,
        forget,
        list
      }
      return { video }
    })
})
