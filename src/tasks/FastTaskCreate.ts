import { Effect } from "effect"
import { makeKeyCheck } from "../accounts/Auth.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { bodyTimedOut, isJsonContentType, parseJsonBytes, unreadableBody } from "../platform/http/Body.ts"
import type { FastRoute } from "../platform/http/FastRoutes.ts"
import { currentTraceparent } from "../platform/TraceContext.ts"
import { acceptedHeaders, cancelAfterOf, idempotencyKeyOf } from "./CreateHttp.ts"
import { InvalidTaskRequest } from "./Errors.ts"
import { type CreateContext, Tasks } from "./Tasks.ts"

const CREATE_PATH = "/v1/video/tasks"

const DECIMAL = /^[0-9]{1,15}$/

/**
 * `POST /v1/video/tasks` as a fast route (platform/http/FastRoutes.ts): the
 * steps of the contract's `createVideoTask` (CreateHttp.ts) under
 * ModelKeyAuth, in its order: the key and its create rate, the
 * `Idempotency-Key` and `Cancel-After` headers, the JSON body, then
 * Tasks.createVideo, answered 202 with the same headers and the task.
 *
 * It takes a JSON body of a declared `Content-Length` within
 * `limits.body.json_bytes` only, which the server reads whole; any other
 * create (another content type, a body over the limit, a chunked one) is
 * the full path's, which answers 415 and 413 and bounds what it reads. The
 * body's read deadline is `limits.body.read_timeout_s`, as there.
 */
export const fastTaskCreate = Effect.gen(function*() {
  const check = yield* makeKeyCheck
  const tasks = yield* Tasks
  const { limits } = yield* AppConfig
  const readTimeoutMs = limits.body.read_timeout_s * 1000
  const route: FastRoute<never> = {
    match: (method, path, request) => {
      if (method !== "POST" || path !== CREATE_PATH) return undefined
      if (!isJsonContentType(request.header("content-type"))) return undefined
      if (request.header("transfer-encoding") !== undefined) return undefined
      const length = request.header("content-length")
      return length !== undefined && DECIMAL.test(length) && Number(length) <= limits.body.json_bytes ? [] : undefined
    },
    template: () => CREATE_PATH,
    answer: (_, request) =>
      Effect.gen(function*() {
        const principal = yield* check("model", request.header("authorization"), request.url)
        const idempotencyKey = idempotencyKeyOf(request.header("idempotency-key"))
        if (idempotencyKey instanceof InvalidTaskRequest) return yield* idempotencyKey
        const cancelAfterSeconds = cancelAfterOf(request.header("cancel-after"))
        if (cancelAfterSeconds instanceof InvalidTaskRequest) return yield* cancelAfterSeconds
        const bytes = yield* Effect.tryPromise({ try: () => request.body(readTimeoutMs), catch: unreadableBody })
        if (bytes === undefined) return yield* bodyTimedOut()
        const body = yield* parseJsonBytes(bytes)
        const context: CreateContext = {
          principal,
          idempotencyKey,
          traceparent: yield* currentTraceparent,
          cancelAfterSeconds
        }
        const created = yield* tasks.createVideo(context, body)
        return {
          status: 202,
          headers: acceptedHeaders("video", created, limits.poll_interval_s),
          body: created.task
        }
      })
  }
  return route
})
