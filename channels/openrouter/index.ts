import { HttpClient } from "@effect/platform"
import { Effect, Either, Redacted, Schema, Stream } from "effect"
import {
  answerDetail,
  checkExchange,
  defineAdapter,
  type GenerationError,
  HttpUrl,
  providerExchange,
  type ResultRef,
  retryHintMs,
  SecretFromEnv,
  SubmitOutcome,
  type UpstreamState,
  type VideoJob,
  type VideoUpstream,
  withUpstream
} from "../../src/channel/contract/Adapter.ts"
import { openRouterCallbacks } from "./Callbacks.ts"
import {
  ambiguous,
  fetchBroken,
  fromContentStatus,
  fromCreateStatus,
  fromTransport,
  pollFailed,
  unsupported
} from "./Failures.ts"
import { modelOf, routeLimits, routeProblem } from "./Models.ts"
import { createBody, endpoints } from "./Requests.ts"
import { type Job, stateOf } from "./States.ts"

/**
 * `openrouter`: video models of any family OpenRouter serves, through its
 * asynchronous video API (docs/adapters/openrouter.md). One key serves every
 * model; the route's `upstream_model` names OpenRouter's model id, and
 * Models.ts says what each takes.
 *
 * ```json
 * "openrouter": { "adapter": "openrouter", "credentials": { "api_key": { "env": "OPENROUTER_API_KEY" } } }
 * ```
 *
 * - submit: `POST /videos` (JSON, Requests.ts), after refusing what the
 *   model has no field for.
 * - poll: `GET /videos/{jobId}`, one request per job (no batch read), a few
 *   at a time.
 * - results: `GET /videos/{jobId}/content?index=0` with the key, built from
 *   `base_url` (the key never goes to an address an answer names); the
 *   engine re-hosts the bytes.
 * - usage: `usage.cost` (US dollars) of a completed job, kept for operators.
 * - check: `GET /key`, free, changes nothing, needs a valid key.
 * - no cancel and no find: the protocol has neither a cancel nor a way to
 *   look a job up by our id, so a task waiting upstream runs on, and a
 *   create whose answer was lost fails the task with its refund.
 * - callbacks (`"callbacks": true`): `callback_url` on the create; the
 *   event OpenRouter posts when the job ends, signed when
 *   `credentials.webhook_secret` is set, only hastens the poll (Callbacks.ts).
 */

export const OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"

/** Jobs polled at once per poll call: one request each. */
const POLL_CONCURRENCY = 4

const Created = Schema.Struct({ id: Schema.NonEmptyString })

const Settings = Schema.Struct({
  base_url: Schema.optionalWith(HttpUrl, { default: () => OPENROUTER_BASE_URL }),
  credentials: Schema.Struct({
    api_key: SecretFromEnv,
    /** The signing secret of the OpenRouter workspace's webhooks: callbacks must then be signed with it. */
    webhook_secret: Schema.optional(SecretFromEnv)
  }),
  /** OpenRouter's app attribution: sent as `HTTP-Referer` (the app's URL). */
  http_referer: Schema.optional(Schema.NonEmptyString),
  /** OpenRouter's app attribution: sent as `X-OpenRouter-Title` and `X-Title` (the app's name). */
  app_title: Schema.optional(Schema.NonEmptyString)
})
type Settings = typeof Settings.Type

const apiOf = (settings: Settings) =>
  endpoints(settings.base_url, Redacted.value(settings.credentials.api_key), {
    referer: settings.http_referer,
    title: settings.app_title
  })

export default defineAdapter({
  name: "openrouter",
  kinds: ["video"],
  settings: Settings,
  // The families declare their provider options; Requests.ts says which OpenRouter takes.
  providerOptions: {},
  callbacks: (channel) => openRouterCallbacks(channel.settings.credentials.webhook_secret),
  checkRoute: (_channel, route) => routeProblem(route.family, route.kind, route.upstreamModel),
  routeLimits: (_channel, route) => route.kind === "video" ? routeLimits(route.upstreamModel) : undefined,
  check: (channel) =>
    Effect.flatMap(HttpClient.HttpClient, (client) =>
      checkExchange(client, apiOf(channel.settings).key(), {
        what: "GET /key",
        seconds: channel.settings.timeouts.poll_s,
        // The key's own record: `{ "data": { "label", "limit", "usage", … } }`.
        looksRight: (body) => {
          const data = (body as { data?: unknown } | null)?.data
          return typeof data === "object" && data !== null && typeof (data as { label?: unknown }).label === "string"
        }
      })),
  make: (channel) =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const { timeouts } = channel.settings
      const api = apiOf(channel.settings)
      const log = channel.warn
      const exchange = providerExchange(client, {
        provider: "OpenRouter",
        channel: channel.name,
        transport: fromTransport
      })

      const submit = (job: VideoJob) =>
        Effect.gen(function*() {
          const model = modelOf(job.upstreamModel)
          // Routes were checked at the start (checkRoute); this guards a config the check did not see.
          if (model === undefined) return yield* unsupported("This video model is not available on this service.")
          const body = createBody(job, model)
          if (Either.isLeft(body)) return yield* unsupported(body.left)
          // With `"callbacks": true`: OpenRouter posts an event there when the job ends (Callbacks.ts).
          const withCallback = job.callbackUrl === undefined
            ? body.right
            : { ...body.right, callback_url: job.callbackUrl }
          const answer = yield* exchange(api.create(withCallback), timeouts.submit_s, "a create", ambiguous)
          if (answer.status < 200 || answer.status > 299) {
            return yield* withUpstream(
              fromCreateStatus(answer.status, answer.headers, answer.body),
              answerDetail(answer)
            )
          }
          const created = Schema.decodeUnknownOption(Created)(answer.body)
          // A 2xx without an id may still have created a job we cannot poll: the engine fails the task with its refund.
          if (created._tag === "None") return yield* ambiguous()
          return SubmitOutcome.Accepted({ upstreamId: created.value.id })
        })

      const pollOne = (id: string) =>
        exchange(api.get(id), timeouts.poll_s, "a status read", () => pollFailed()).pipe(
          Effect.flatMap((answer): Effect.Effect<UpstreamState | undefined, GenerationError> => {
            if (answer.status === 200 && typeof answer.body === "object" && answer.body !== null) {
              return Effect.succeed(stateOf(answer.body as Job, api.contentUrl(id)))
            }
            // A job OpenRouter does not know (yet): left Unknown, asked again until the deadline.
            if (answer.status === 404) return Effect.succeed(undefined)
            return Effect.fail(
              withUpstream(
                pollFailed(retryHintMs(answer.headers, answer.body), answer.status === 429),
                answerDetail(answer)
              )
            )
          }),
          // A poll's transport failure is never a reason to fail over: the job is already upstream.
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
            // The key goes only to this channel's own content endpoint (States.ts marks it).
            if (ref.auth !== "api_key") return yield* fetchBroken()
            const response = yield* client.execute(api.content(ref.url)).pipe(
              Effect.tapError((e) => log("a download from OpenRouter failed", { cause: e.message })),
              Effect.mapError(() => fetchBroken())
            )
            if (response.status !== 200) {
              const text = yield* Effect.orElseSucceed(response.text, () => "")
              yield* log("OpenRouter refused a download", {
                upstream_status: response.status,
                upstream_body: text.slice(0, 500)
              })
              return yield* fromContentStatus(response.status, response.headers)
            }
            return response.stream.pipe(Stream.mapError(() => fetchBroken()))
          })
        )

      const video: VideoUpstream = { submit, poll, fetchResult }
      return { video }
    })
})
