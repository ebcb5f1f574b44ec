import { HttpClient, type HttpClientError, HttpClientRequest } from "@effect/platform"
import { Duration, Effect, Either, Redacted, Schema } from "effect"
import {
  answerDetail,
  certainlyNotSent,
  checkExchange,
  defineAdapter,
  eventStream,
  hasArray,
  HttpUrl,
  type ImageJob,
  SecretFromEnv,
  withUpstream
} from "../../src/channel/contract/Adapter.ts"
import { ambiguous, failureOf, readImages, transient } from "./Answers.ts"
import { imagesRequest } from "./Requests.ts"

/**
 * The OpenAI Images API as a channel for image models
 * (docs/adapters/openai-images.md), or any relay that speaks it. The upstream
 * is synchronous: one request answers with the pictures, so a run is one call
 * held open up to `timeouts.submit_s` (high quality can take minutes).
 *
 * ```json
 * "openai": { "adapter": "openai-images", "base_url": "https://api.openai.com/v1",
 *             "credentials": { "api_key": { "env": "OPENAI_API_KEY" } },
 *             "timeouts": { "submit_s": 300 } }
 * ```
 */

const fromTransport = (error: HttpClientError.HttpClientError) => certainlyNotSent(error) ? transient() : ambiguous

const MIME = { png: "image/png", jpeg: "image/jpeg", webp: "image/webp" } as const

export default defineAdapter({
  name: "openai-images",
  kinds: ["image"],
  // GPT image models bill tokens, which every answer counts (Answers.ts).
  usageUnits: { image: ["token"] },
  settings: Schema.Struct({
    base_url: HttpUrl,
    credentials: Schema.Struct({ api_key: SecretFromEnv })
  }),
  providerOptions: {},
  // The model list: free, changes nothing, and needs the key.
  check: (channel) =>
    Effect.flatMap(HttpClient.HttpClient, (client) =>
      checkExchange(
        client,
        HttpClientRequest.get(`${channel.settings.base_url}/models`).pipe(
          HttpClientRequest.bearerToken(Redacted.value(channel.settings.credentials.api_key))
        ),
        { what: "GET /models", seconds: channel.settings.timeouts.poll_s, looksRight: hasArray("data") }
      )),
  make: (channel) =>
    Effect.gen(function*() {
      const client = yield* HttpClient.HttpClient
      const { base_url, credentials, timeouts } = channel.settings
      const limit = Duration.seconds(timeouts.submit_s)

      const call = (job: ImageJob) =>
        Effect.gen(function*() {
          const request = imagesRequest(base_url, Redacted.value(credentials.api_key), job.upstreamModel, job)
          const response = yield* client.execute(request).pipe(
            Effect.tapError((e) =>
              Effect.logWarning("an image request to the upstream failed").pipe(
                Effect.annotateLogs({
                  channel: channel.name,
                  cause: String((e.cause as Error | undefined)?.message ?? e.message)
                })
              )
            ),
            Effect.mapError((e) => withUpstream(fromTransport(e), { message: `an image request failed: ${e.message}` }))
          )
          // A body that breaks off was sent and maybe run upstream: ambiguous, like a time-out.
          const text = yield* Effect.mapError(response.text, () => ambiguous)
          if (response.status !== 200) {
            const failure = failureOf(response.status, response.headers, text)
            yield* Effect.logWarning("upstream refused an image request").pipe(Effect.annotateLogs({
              channel: channel.name,
              upstream_status: response.status,
              upstream_request_id: response.headers["x-request-id"] ?? null,
              upstream_body: text.slice(0, 500)
            }))
            return yield* Effect.fail(
              withUpstream(failure, answerDetail({ status: response.status, text }))
            )
          }
          const images = readImages(text)
          return Either.isLeft(images) ? yield* Effect.fail(images.left) : images.right
        }).pipe(
          Effect.timeoutFail({ duration: limit, onTimeout: () => ambiguous }),
          Effect.withSpan("upstream.submit", { attributes: { "channel.name": channel.name, "task.id": job.taskId } })
        )

      const generate = (job: ImageJob) =>
        eventStream(({ charge, output }) =>
          Effect.gen(function*() {
            const answered = yield* call(job)
            // Made, and billed by the tokens the answer counts, before the engine looks at the images.
            yield* charge({ usage: answered.usage, billed: true })
            // Type, format and dimensions are read from the bytes by the engine before they are stored.
            for (const bytes of answered.images) {
              yield* output({
                bytes,
                mimeType: MIME[job.request.format],
                extension: job.request.format === "jpeg" ? "jpg" : job.request.format,
                format: job.request.format
              })
            }
          })
        )
      return { image: { generate } }
    })
})
