import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Layer, Schema } from "effect"
import { ModelKeyAuthLive } from "../accounts/Auth.ts"
import { CurrentPrincipal } from "../accounts/Security.ts"
import { GatewayApi } from "../Api.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { readJson } from "../platform/http/Body.ts"
import type { Deprecation } from "../platform/Settings.ts"
import { currentTraceparent } from "../platform/TraceContext.ts"
import { parseCancelAfter } from "./CancelAfter.ts"
import { InvalidTaskRequest } from "./Errors.ts"
import { imageSubmission } from "./ImageFormHttp.ts"
import type { ImageTask, TaskKind, VideoTask } from "./Task.ts"
import { type CreateContext, type Created, Tasks } from "./Tasks.ts"

/**
 * The task creates' handlers (`POST /v1/{video,image}/tasks`, model token):
 * the caller and its headers in, Tasks' answer out as 202. What every
 * create shares (the context, the 202) is also used by the synchronous
 * image endpoints (src/images/) and the quotes.
 */

const MAX_IDEMPOTENCY_KEY = 128

/** The `Idempotency-Key` header: null when none was sent, the key, or the 400 for one of the wrong length. */
export const idempotencyKeyOf = (key: string | undefined): string | null | InvalidTaskRequest => {
  if (key === undefined) return null
  if (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY) {
    return new InvalidTaskRequest({
      code: "invalid_request",
      message: `Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY} characters.`
    })
  }
  return key
}

/** The `Cancel-After` header (CancelAfter.ts): the deadline in seconds, null when none was sent, or the 400. */
export const cancelAfterOf = (value: string | undefined): number | null | InvalidTaskRequest => {
  if (value === undefined) return null
  const parsed = parseCancelAfter(value)
  return "seconds" in parsed
    ? parsed.seconds
    : new InvalidTaskRequest({ code: "invalid_request", message: parsed.problem })
}

/** A header read by `of`, from the request, failing with the 400 `of` answers. */
const fromHeader = <A>(name: string, of: (value: string | undefined) => A | InvalidTaskRequest) =>
  Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
    const read = of(request.headers[name])
    return read instanceof InvalidTaskRequest ? Effect.fail(read) : Effect.succeed(read)
  })

/** Who creates (the key's principal), its Idempotency-Key and the request's trace context. */
export const createContext = Effect.gen(function*() {
  const context: CreateContext = {
    principal: yield* CurrentPrincipal,
    idempotencyKey: yield* fromHeader("idempotency-key", idempotencyKeyOf),
    traceparent: yield* currentTraceparent
  }
  return context
})

/** A task create's context: createContext and its deadline (the synchronous image endpoints take none). */
export const taskCreateContext = Effect.gen(function*() {
  const context: CreateContext = {
    ...(yield* createContext),
    cancelAfterSeconds: yield* fromHeader("cancel-after", cancelAfterOf)
  }
  return context
})

/**
 * A deprecated model's headers (docs/api.md, Model lifecycle): `Deprecation`
 * as RFC 9745 writes a date (`@` and Unix seconds), `Sunset` as RFC 8594's
 * HTTP-date, and a `Link` to the successor's entry of `/v1/models`.
 */
export const deprecationHeaders = (deprecation: Deprecation | undefined): Record<string, string> =>
  deprecation === undefined ? {} : {
    deprecation: `@${deprecation.since}`,
    sunset: new Date(deprecation.sunset * 1000).toUTCString(),
    ...(deprecation.successor === undefined
      ? {}
      : { link: `</v1/models/${encodeURIComponent(deprecation.successor)}>; rel="successor-version"` })
  }

/** A create's 202 headers: `Location` and `Retry-After`; a replay also says `Idempotent-Replayed: true`. */
export const acceptedHeaders = (
  kind: TaskKind,
  { deprecation, replayed, task }: Created<VideoTask | ImageTask>,
  pollSeconds: number
): Record<string, string> => ({
  location: `/v1/${kind}/tasks/${task.id}`,
  "retry-after": String(pollSeconds),
  ...(replayed ? { "idempotent-replayed": "true" } : {}),
  ...deprecationHeaders(deprecation)
})

/** 202 with acceptedHeaders and the task. */
export const accepted = (kind: TaskKind, created: Created<VideoTask | ImageTask>, pollSeconds: number) =>
  HttpServerResponse.unsafeJson(created.task, { status: 202, headers: acceptedHeaders(kind, created, pollSeconds) })

const createVideo = Effect.gen(function*() {
  const context = yield* taskCreateContext
  const body = yield* readJson(Schema.Unknown)
  const created = yield* Effect.flatMap(Tasks, (tasks) => tasks.createVideo(context, body))
  return accepted("video", created, (yield* AppConfig).limits.poll_interval_s)
})

const createImage = Effect.gen(function*() {
  const context = yield* taskCreateContext
  const submission = yield* imageSubmission(context.principal.accountId)
  const created = yield* Effect.flatMap(Tasks, (tasks) => tasks.createImage(context, submission))
  return accepted("image", created, (yield* AppConfig).limits.poll_interval_s)
})

export const TaskCreateLive = HttpApiBuilder.group(GatewayApi, "taskCreate", (handlers) =>
  handlers
    .handle("createVideoTask", () => createVideo)
    .handle("createImageTask", () => createImage)).pipe(
    Layer.provide(ModelKeyAuthLive)
  )
