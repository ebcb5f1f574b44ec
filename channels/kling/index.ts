import { HttpClient, HttpClientRequest } from "@effect/platform"
import { Clock, Effect, Either, Redacted, Schema, Stream } from "effect"
import {
  answerDetail,
  type AsyncRunner,
  checkExchange,
  defineAdapter,
  type GenerationError,
  hasArray,
  HttpUrl,
  providerExchange,
  type ResultRef,
  SecretFromEnv,
  SubmitOutcome,
  type UpstreamAnswer,
  type UpstreamState,
  type VideoJob,
  withUpstream
} from "../../src/channel/contract/Adapter.ts"
import { klingCallbacks } from "./Callbacks.ts"
import {
  ambiguous,
  codeOf,
  fetchBroken,
  fromCreateStatus,
  fromPollStatus,
  fromTransport,
  isAuthRefused,
  isTokenRefused,
  resultExpired,
  unsupported
} from "./Failures.ts"
import { makeTokens, mintJwt } from "./Jwt.ts"
import {
  batches,
  createOf,
  get,
  legacyId,
  type LegacyKind,
  MAX_IDS_PER_QUERY,
  parseLegacyId,
  post
} from "./Requests.ts"
import { currentStatesOf, legacyStateOf } from "./States.ts"

/**
 * `kling`: famK (Kling 3.0, 3.0 Omni) on Kling's API, either generation
 * (docs/adapters/kling.md):
 *
 * ```json
 * "kling": { "adapter": "kling", "api": "current", "credentials": { "api_key": { "env": "KLING_API_KEY" } } }
 * "kling-jwt": { "adapter": "kling", "api": "legacy",
 *                "credentials": { "access_key": { "env": "KLING_AK" }, "secret_key": { "env": "KLING_SK" } } }
 * ```
 *
 * - submit: legacy `POST /v1/videos/{text2video,image2video,omni-video}`
 *   with `model_name` and a JWT (Jwt.ts); current
 *   `POST /{text-to-video,image-to-video,omni-video}/{model}` with the API
 *   key (Requests.ts). Our task id goes as `external_task_id`.
 * - poll: current, many tasks per `GET /tasks?task_ids=a,b`; legacy, one
 *   `GET /v1/videos/{kind}/{id}` per task (the kind is kept in the stored id).
 * - find: an ambiguous create is looked up by `external_task_id` (current:
 *   `GET /tasks?external_task_ids=`; legacy: the single query with our id,
 *   then the newest page of the kind's list), so it is adopted, never
 *   created twice. Kling also refuses a second task with the same id.
 * - callbacks (`"callbacks": true`): `callback_url` is sent; a callback,
 *   signed (Standard Webhooks) when `credentials.webhook_secret` is set,
 *   only hastens the poll (Callbacks.ts).
 * - results: `task_result.videos[].url` / `outputs[].url` (kept 30 days),
 *   fetched without our credentials and re-hosted.
 */

/** Kling's global host; the Chinese mainland one is `https://api-beijing.klingai.com`. */
export const KLING_BASE_URL = "https://api-singapore.klingai.com"
const base_url = Schema.optionalWith(HttpUrl, { default: () => KLING_BASE_URL })

/** The newest tasks of a kind read when looking an ambiguous legacy create up in the list (Kling's page bound). */
const LEGACY_FIND_PAGE = 500

const str = (value: unknown) => (typeof value === "string" && value.length > 0 ? value : undefined)

export default defineAdapter({
  name: "kling",
  kinds: ["video"],
  settings: Schema.Union(
    Schema.Struct({
      api: Schema.Literal("legacy"),
      base_url,
      credentials: Schema.Struct({
        access_key: SecretFromEnv,
        secret_key: SecretFromEnv,
        webhook_secret: Schema.optional(SecretFromEnv)
      })
    }),
    Schema.Struct({
      api: Schema.Literal("current"),
      base_url,
      credentials: Schema.Struct({ api_key: SecretFromEnv, webhook_secret: Schema.optional(SecretFromEnv) })
    })
  ),
  // The famK plugin declares `provider_options.famK` (negative_prompt, cfg_scale); Kling needs no namespace of its own.
  providerOptions: {},
  callbacks: (channel) => klingCallbacks(channel.settings.api, channel.settings.credentials.webhook_secret),
  // A list with the channel's credentials: the legacy API's text-to-video page of one, or the current
  // API's batch query of an id no task has. Free, changes nothing, and needs the key (or a signed token).
  check: (channel) =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const settings = channel.settings
      const base = settings.base_url
      const legacy = settings.api === "legacy"
      const nowS = Math.floor((yield* Clock.currentTimeMillis) / 1000)
      const token = settings.api === "legacy"
        ? yield* Effect.promise(() =>
          mintJwt(
            Redacted.value(settings.credentials.access_key),
            Redacted.value(settings.credentials.secret_key),
            nowS
          )
        )
        : Redacted.value(settings.credentials.api_key)
      const path = legacy ? "/v1/videos/text2video" : "/tasks"
      return yield* checkExchange(
        client,
        get(base, path, token, legacy ? { pageNum: "1", pageSize: "1" } : { task_ids: "mtg-channel-check" }),
        {
          what: `GET ${path}`,
          seconds: settings.timeouts.poll_s,
          looksRight: (body) => codeOf(body) === 0 && hasArray("data")(body),
          refused: (_, body) => isAuthRefused(codeOf(body))
        }
      )
    }),
  make: (channel) =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const settings = channel.settings
      const { timeouts } = settings
      const base = settings.base_url
      const tokens = settings.api === "legacy"
        ? makeTokens(
          Redacted.value(settings.credentials.access_key),
          Redacted.value(settings.credentials.secret_key)
        )
        : undefined
      const auth = tokens?.token ??
        Effect.succeed(Redacted.value((settings.credentials as { api_key: Redacted.Redacted<string> }).api_key))
      const log = channel.warn
      // Kling answers a refusal with HTTP 200 and a code other than 0 as often as with an HTTP error.
      const accepted = (answer: UpstreamAnswer) =>
        answer.status >= 200 && answer.status <= 299 && codeOf(answer.body) === 0
      const send = providerExchange(client, {
        provider: "Kling",
        channel: channel.name,
        transport: fromTransport,
        refused: (answer) => !accepted(answer)
      })

      /** One exchange with the current token; `ok` when Kling took it. */
      const exchange = (
        request: (token: string) => HttpClientRequest.HttpClientRequest,
        seconds: number,
        what: string,
        onTimeout: () => GenerationError
      ) =>
        Effect.gen(function*() {
          const answer = yield* send(request(yield* auth), seconds, what, onTimeout)
          const ok = accepted(answer)
          // A token Kling found not yet valid or expired: the next request carries a new one.
          if (!ok && tokens && isTokenRefused(codeOf(answer.body))) yield* tokens.forget
          return { ok, ...answer }
        })

      const submit = (job: VideoJob) =>
        Effect.gen(function*() {
          const create = createOf(job, settings.api)
          if (Either.isLeft(create)) return yield* unsupported(create.left)
          const { body, kind, path } = create.right
          const answer = yield* exchange(
            (token) => post(base, path, token, body),
            timeouts.submit_s,
            "a create",
            ambiguous
          )
          if (!answer.ok) {
            return yield* withUpstream(
              fromCreateStatus(answer.status, answer.headers, answer.body),
              answerDetail(answer)
            )
          }
          const data = (answer.body as { data?: any }).data
          const id = settings.api === "legacy" ? str(data?.task_id) : str(data?.id)
          // A success without an id may still have created a task: find decides.
          if (id === undefined) return yield* ambiguous()
          return SubmitOutcome.Accepted({ upstreamId: settings.api === "legacy" ? legacyId(kind, id) : id })
        })

      const pollFailed = () => fromPollStatus({}, null)
      /** A poll or find exchange: its `data` when Kling answered code 0, else the failure to try again later. */
      const query = (path: string, params: Record<string, string>, what: string) =>
        Effect.gen(function*() {
          const answer = yield* exchange((token) => get(base, path, token, params), timeouts.poll_s, what, pollFailed)
          if (!answer.ok) return { found: false as const, status: answer.status, body: answer.body, answer }
          return { found: true as const, data: (answer.body as { data?: unknown }).data }
        }).pipe(
          // A poll's transport failure is never a reason to fail over: the task is already upstream.
          Effect.catchTag("GenerationError", (e) => e.ambiguous || e.notAccepted ? pollFailed() : Effect.fail(e))
        )

      const pollCurrent = (ids: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const states = new Map<string, UpstreamState>()
          for (const batch of batches(ids)) {
            const got = yield* query("/tasks", { task_ids: batch.join(",") }, "a batch query")
            if (!got.found) {
              return yield* withUpstream(fromPollStatus(got.answer.headers, got.body), answerDetail(got.answer))
            }
            const found = currentStatesOf({ data: got.data })
            if (found === undefined) return yield* pollFailed()
            for (const [id, state] of found) states.set(id, state)
          }
          return states as ReadonlyMap<string, UpstreamState>
        })

      const pollLegacy = (ids: ReadonlyArray<string>) =>
        Effect.forEach(ids, (id) => {
          const parsed = parseLegacyId(id)
          const none: readonly [string, UpstreamState | undefined] = [id, undefined]
          if (parsed === undefined) return Effect.succeed(none)
          return query(`/v1/videos/${parsed.kind}/${encodeURIComponent(parsed.taskId)}`, {}, "a query").pipe(
            Effect.flatMap((got): Effect.Effect<readonly [string, UpstreamState | undefined], GenerationError> => {
              if (got.found) return Effect.succeed([id, legacyStateOf(got.data)])
              // A task Kling does not know (404) is left Unknown; anything else is asked again later.
              if (got.status === 404) return Effect.succeed(none)
              return Effect.fail(fromPollStatus(got.answer.headers, got.body))
            })
          )
        }, { concurrency: 4 }).pipe(
          Effect.map((pairs) => {
            const states = new Map<string, UpstreamState>()
            for (const [id, state] of pairs) if (state !== undefined) states.set(id, state)
            return states as ReadonlyMap<string, UpstreamState>
          })
        )

      /** The upstream task whose `external_task_id` is this job's id, if Kling holds one. */
      const find = (job: VideoJob) =>
        Effect.gen(function*() {
          const create = createOf(job, settings.api)
          // Never sent, so nothing upstream.
          if (Either.isLeft(create)) return undefined
          if (settings.api === "current") {
            const got = yield* query("/tasks", { external_task_ids: job.taskId }, "a lookup")
            if (!got.found) return yield* fromPollStatus(got.answer.headers, got.body)
            if (!Array.isArray(got.data)) return yield* pollFailed()
            const task = got.data.find((t: any) => t?.external_id === job.taskId)
            return str(task?.id)
          }
          const kind: LegacyKind = create.right.kind
          const ours = (t: any) => t?.task_info?.external_task_id === job.taskId && str(t?.task_id) !== undefined
          // Kling's single query takes our id in place of its own.
          const single = yield* query(`/v1/videos/${kind}/${encodeURIComponent(job.taskId)}`, {}, "a lookup")
          if (single.found && ours(single.data)) return legacyId(kind, (single.data as any).task_id)
          if (!single.found && single.status !== 404 && single.status !== 400) {
            return yield* fromPollStatus(single.answer.headers, single.body)
          }
          // Otherwise the newest page of the kind's list, where a task created seconds ago is.
          const list = yield* query(
            `/v1/videos/${kind}`,
            { pageNum: "1", pageSize: String(LEGACY_FIND_PAGE) },
            "a list"
          )
          if (!list.found) return yield* fromPollStatus(list.answer.headers, list.body)
          if (!Array.isArray(list.data)) return yield* pollFailed()
          const task = list.data.find(ours)
          return task === undefined ? undefined : legacyId(kind, task.task_id)
        })

      const fetchResult = (ref: ResultRef) =>
        Stream.unwrap(
          Effect.gen(function*() {
            const response = yield* client.execute(HttpClientRequest.get(ref.url)).pipe(Effect.mapError(fetchBroken))
            // The CDN answers 403 for a lapsed or refused link, 404 once the file is gone (30 days).
            if (response.status === 403 || response.status === 404 || response.status === 410) {
              yield* log("a Kling result link has expired", { upstream_status: response.status })
              return yield* resultExpired()
            }
            if (response.status !== 200) return yield* fetchBroken()
            return response.stream.pipe(Stream.mapError(fetchBroken))
          })
        )

      const video: AsyncRunner<VideoJob> = {
        submit,
        poll: settings.api === "legacy" ? pollLegacy : pollCurrent,
        // The current API's batch query takes many ids at once; the legacy one costs a request per id.
        pollBatch: settings.api === "legacy" ? undefined : MAX_IDS_PER_QUERY,
        fetchResult,
        find
      }
      return { video }
    })
})
