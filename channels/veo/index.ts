import { HttpClient, HttpClientRequest } from "@effect/platform"
import { Duration, Effect, Either, Redacted, Schema, Stream } from "effect"
import {
  answerDetail,
  type AsyncRunner,
  type ChannelCheck,
  checkExchange,
  defineAdapter,
  type GenerationError,
  hasArray,
  HttpUrl,
  type ResultRef,
  SecretFromEnv,
  SubmitOutcome,
  UpstreamState,
  type VideoJob,
  withUpstream
} from "../../src/channel/contract/Adapter.ts"
import { makeTokens, parseServiceAccount } from "./Auth.ts"
import { checkModels } from "./Checks.ts"
import {
  ambiguous,
  fetchBroken,
  fromCreateStatus,
  fromPollStatus,
  fromTransport,
  isModelNotFound,
  modelNotServed,
  resultExpired,
  unreadableResult
} from "./Failures.ts"
import { inlineBytes, sanitizedText } from "./Inline.ts"
import { retirementNote } from "./Models.ts"
import { createBody, createRequest, type Endpoint, isOperationName, operationRequest } from "./Requests.ts"
import { INLINE, stateOf, WITH_KEY } from "./States.ts"

/**
 * `veo`: famV (Veo 3.1) video models on the Gemini API or on Vertex AI
 * (docs/adapters/veo.md).
 *
 * ```json
 * "gemini": { "adapter": "veo", "api": "gemini", "credentials": { "api_key": { "env": "GEMINI_API_KEY" } } }
 * "vertex": { "adapter": "veo", "api": "vertex", "project": "my-project", "location": "us-central1",
 *             "credentials": { "service_account_json": { "env": "VERTEX_SA_JSON" } } }
 * ```
 *
 * - submit: `POST …:predictLongRunning` (Requests.ts maps the request and
 *   sends images inline); the answer is the operation's name, our upstream id.
 * - poll: one call per operation (Google has no batch status): Gemini
 *   `GET {name}`, Vertex `POST …:fetchPredictOperation` (States.ts).
 * - results: a Gemini file URI downloaded with the key (redirects followed,
 *   the key sent to the API's own origin only), or an inline base64 video
 *   decoded as it streams (Inline.ts). `gcsUri` results are never asked for
 *   (no `storageUri` is sent) and fail clearly if they come.
 * - auth: Gemini `x-goog-api-key`; Vertex an OAuth token minted from the
 *   service-account key (Auth.ts).
 * - no find: Google has no idempotency key and no operation listing
 *   (docs/adapters/veo.md, Failures), so a create whose answer is lost fails with its refund.
 */

export const GEMINI_BASE_URL = "https://generativelanguage.googleapis.com/v1beta"
/** Vertex's regional host, or the global one for `location: "global"`. */
export const vertexBaseUrl = (location: string) =>
  location === "global"
    ? "https://aiplatform.googleapis.com/v1"
    : `https://${location}-aiplatform.googleapis.com/v1`

const ServiceAccountJson = SecretFromEnv.pipe(
  Schema.filter((json) => {
    const parsed = parseServiceAccount(Redacted.value(json))
    return Either.isLeft(parsed) ? `the service-account key ${parsed.left}` : true
  })
)
const Segment = Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9-]*$/, { message: () => "a Google Cloud id" }))
/** A Veo model id as Google spells them (`veo-3.1-generate-001`); it becomes a URL path segment. */
const ModelId = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9][a-z0-9.-]*$/, { message: () => "a model id (lower-case letters, digits, dots, hyphens)" })
)
/**
 * Upstream models the channel check asks about beside the ones the
 * channel's routes name (docs/adapters/veo.md, Check): a model about to be
 * routed there, checked before the route is written. None by default.
 */
const CheckModels = Schema.optionalWith(Schema.Array(ModelId), { default: () => [] })

const Settings = Schema.Union(
  Schema.Struct({
    api: Schema.Literal("gemini"),
    base_url: Schema.optionalWith(HttpUrl, { default: () => GEMINI_BASE_URL }),
    check_models: CheckModels,
    credentials: Schema.Struct({ api_key: SecretFromEnv })
  }),
  Schema.Struct({
    api: Schema.Literal("vertex"),
    base_url: Schema.optional(HttpUrl),
    project: Segment,
    location: Segment,
    check_models: CheckModels,
    credentials: Schema.Struct({ service_account_json: ServiceAccountJson })
  })
)

const Created = Schema.Struct({ name: Schema.NonEmptyString })

export default defineAdapter({
  name: "veo",
  kinds: ["video"],
  settings: Settings,
  // The famV plugin declares `provider_options.famV` (seed, negative_prompt); Veo needs no namespace of its own.
  providerOptions: {},
  // A model list of one with the channel's credentials (Vertex: after minting a token, which proves the
  // service-account key), then each routed model and each of `check_models` by id (Checks.ts): free, changes nothing.
  check: (channel, routed) =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const settings = channel.settings
      const seconds = settings.timeouts.poll_s
      if (settings.api === "gemini") {
        const key = Redacted.value(settings.credentials.api_key)
        const first = yield* checkExchange(
          client,
          HttpClientRequest.get(`${settings.base_url}/models`, {
            urlParams: { pageSize: "1" }
          }).pipe(HttpClientRequest.setHeader("x-goog-api-key", Redacted.value(settings.credentials.api_key))),
          {
            what: "GET /models (one item)",
            seconds,
            looksRight: hasArray("models"),
            // Google answers a key it does not know with 400 INVALID_ARGUMENT, reason API_KEY_INVALID.
            refused: (status, body) => status === 400 && JSON.stringify(body).includes("API_KEY_INVALID")
          }
        )
        return yield* checkModels(client, first, {
          api: "gemini",
          base: settings.base_url,
          models: [...new Set([...routed, ...settings.check_models])],
          seconds,
          authorize: HttpClientRequest.setHeader("x-goog-api-key", key)
        })
      }
      const account = Either.getOrThrow(
        parseServiceAccount(Redacted.value(settings.credentials.service_account_json))
      )
      const minted = yield* Effect.either(Effect.flatten(makeTokens(client, account, seconds)))
      if (Either.isLeft(minted)) {
        const said = minted.left.upstream
        return {
          result: minted.left.notAccepted && !minted.left.transient ? "credentials_refused" : "unreachable",
          detail: `POST token_uri (service-account key): ${
            [said?.status, said?.code, said?.message].filter((s) => s !== undefined).join(" ") || minted.left.message
          }`,
          upstream: said
        } satisfies ChannelCheck
      }
      const base = settings.base_url ?? vertexBaseUrl(settings.location)
      const first = yield* checkExchange(
        client,
        HttpClientRequest.get(`${base}/publishers/google/models`, { urlParams: { pageSize: "1" } }).pipe(
          HttpClientRequest.bearerToken(minted.right)
        ),
        { what: "GET /publishers/google/models (one item)", seconds, looksRight: hasArray("publisherModels") }
      )
      return yield* checkModels(client, first, {
        api: "vertex",
        base,
        models: [...new Set([...routed, ...settings.check_models])],
        seconds,
        authorize: HttpClientRequest.bearerToken(minted.right)
      })
    }),
  make: (channel) =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const settings = channel.settings
      const { timeouts } = settings
      const log = channel.warn

      const endpoint: Endpoint = settings.api === "gemini"
        ? { api: "gemini", base: settings.base_url }
        : {
          api: "vertex",
          base: settings.base_url ?? vertexBaseUrl(settings.location),
          project: settings.project,
          location: settings.location
        }
      /** The secret a request carries: the API key, or a current OAuth token. */
      const secret: Effect.Effect<string, GenerationError> = settings.api === "gemini"
        ? Effect.succeed(Redacted.value(settings.credentials.api_key))
        : yield* makeTokens(
          client,
          Either.getOrThrow(parseServiceAccount(Redacted.value(settings.credentials.service_account_json))),
          timeouts.submit_s
        )

      /** One exchange, bounded in time, its answer read as JSON with long strings taken out (or null). */
      const exchange = (
        request: HttpClientRequest.HttpClientRequest,
        seconds: number,
        what: string,
        onTimeout: () => GenerationError
      ) =>
        Effect.gen(function*() {
          const response = yield* client.execute(request).pipe(
            Effect.tapError((e) => log(`${what} to Veo failed`, { cause: e.message })),
            Effect.mapError((e) => withUpstream(fromTransport(e), { message: `${what} to Veo failed: ${e.message}` }))
          )
          // A body that breaks off after the request was sent leaves its fate unknown.
          const text = yield* Effect.mapError(sanitizedText(response.stream), onTimeout)
          const body = yield* Effect.orElseSucceed(Effect.try(() => JSON.parse(text) as unknown), () => null)
          if (response.status < 200 || response.status > 299) {
            yield* log(`Veo refused ${what}`, { upstream_status: response.status, upstream_body: text.slice(0, 500) })
          }
          return { status: response.status, headers: response.headers, body, text }
        }).pipe(Effect.timeoutFail({ duration: Duration.seconds(seconds), onTimeout }))

      const submit = (job: VideoJob) =>
        Effect.gen(function*() {
          const body = yield* createBody(job, endpoint.api)
          const key = yield* secret
          const answer = yield* exchange(
            createRequest(endpoint, job.upstreamModel, key, body),
            timeouts.submit_s,
            "a create",
            ambiguous
          )
          if (isModelNotFound(answer.status, answer.body, job.upstreamModel)) {
            // The route's model is retired or unknown upstream: the operator's to change (docs/adapters/veo.md,
            // Failures), said in the log with Google's words and kept in the attempt.
            const note = retirementNote(endpoint.api, job.upstreamModel)
            yield* log("Veo does not serve the route's upstream model: change the route's upstream_model", {
              upstream_model: job.upstreamModel,
              known: note
            })
            return yield* withUpstream(modelNotServed(), {
              ...answerDetail(answer),
              message: `${answerDetail(answer).message ?? "not found"} (upstream_model ${job.upstreamModel}: ${note})`
                .slice(0, 500)
            })
          }
          if (answer.status < 200 || answer.status > 299) {
            return yield* withUpstream(
              fromCreateStatus(answer.status, answer.headers, answer.body),
              answerDetail(answer)
            )
          }
          const created = Schema.decodeUnknownOption(Created)(answer.body)
          // A 2xx without a usable name may still have created an operation we cannot poll.
          if (created._tag === "None" || !isOperationName(created.value.name)) return yield* ambiguous()
          return SubmitOutcome.Accepted({ upstreamId: created.value.name })
        })

      const pollFailed = () => fromPollStatus({}, null)
      const poll = (names: ReadonlyArray<string>) =>
        Effect.gen(function*() {
          const states = new Map<string, UpstreamState>()
          for (const name of names) {
            if (!isOperationName(name)) continue
            const key = yield* secret
            const answer = yield* exchange(operationRequest(endpoint, name, key), timeouts.poll_s, "a poll", pollFailed)
            // 404: the operation is unknown or has expired (docs/adapters/veo.md, States and polling), so its
            // result is gone.
            if (answer.status === 404) {
              states.set(name, UpstreamState.Failed({ error: resultExpired(), answer: answer.body }))
              continue
            }
            if (answer.status !== 200) {
              return yield* withUpstream(fromPollStatus(answer.headers, answer.body), answerDetail(answer))
            }
            states.set(name, stateOf(name, answer.body))
          }
          return states as ReadonlyMap<string, UpstreamState>
        }).pipe(
          // A poll's transport or token failure is never a reason to fail over: the task is already upstream.
          Effect.catchTag("GenerationError", (e) => e.ambiguous || e.notAccepted ? pollFailed() : Effect.fail(e))
        )

      const sameOrigin = (url: string) => {
        try {
          return new URL(url).origin === new URL(endpoint.base).origin
        } catch {
          return false
        }
      }

      /** A Gemini file: the key goes to the API's origin only; a redirect elsewhere (signed storage) goes without it. */
      const download = (
        url: string,
        key: string,
        hops: number
      ): Effect.Effect<Stream.Stream<Uint8Array, GenerationError>, GenerationError> =>
        Effect.gen(function*() {
          const request = sameOrigin(url)
            ? HttpClientRequest.get(url).pipe(HttpClientRequest.setHeader("x-goog-api-key", key))
            : HttpClientRequest.get(url)
          const response = yield* client.execute(request).pipe(Effect.mapError(fetchBroken))
          const location = response.headers["location"]
          if (response.status >= 300 && response.status < 400 && location !== undefined && hops < 5) {
            return yield* download(new URL(location, url).href, key, hops + 1)
          }
          if (response.status === 403 || response.status === 404 || response.status === 410) {
            yield* log("a Veo result has expired", { upstream_status: response.status })
            return yield* resultExpired()
          }
          if (response.status !== 200) return yield* fetchBroken()
          return response.stream.pipe(Stream.mapError(fetchBroken))
        })

      const fetchResult = (ref: ResultRef) =>
        Stream.unwrap(
          Effect.gen(function*() {
            const key = yield* secret
            if (ref.auth === WITH_KEY) return yield* download(ref.url, key, 0)
            if (ref.auth?.startsWith(INLINE) && isOperationName(ref.url)) {
              // The operation again, its one inline video decoded from base64 as the answer streams.
              const response = yield* client.execute(operationRequest(endpoint, ref.url, key)).pipe(
                Effect.mapError(fetchBroken)
              )
              if (response.status === 404) return yield* resultExpired()
              if (response.status !== 200) return yield* fetchBroken()
              const index = Number(ref.auth.slice(INLINE.length))
              return inlineBytes(response.stream.pipe(Stream.mapError(fetchBroken)), index, fetchBroken)
            }
            return yield* unreadableResult()
          }).pipe(Effect.catchTag("GenerationError", (e) => e.notAccepted ? fetchBroken() : Effect.fail(e)))
        )

      const video: AsyncRunner<VideoJob> = { submit, poll, fetchResult }
      return { video }
    })
})
