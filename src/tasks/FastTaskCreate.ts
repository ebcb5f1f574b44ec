import { Cause, Effect, Either, Exit } from "effect"
import { makeKeyCheck, makeQuickKeyCheck } from "../accounts/Auth.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { type Failure, isFailure } from "../platform/Failure.ts"
import { bodyTimedOut, isJsonContentType, parseJsonBytes, unreadableBody } from "../platform/http/Body.ts"
import type { FastRoute, PlainRequest } from "../platform/http/FastRoutes.ts"
import { currentTraceparent, formatTraceparent } from "../platform/TraceContext.ts"
import { acceptedHeaders, cancelAfterOf, idempotencyKeyOf } from "./CreateHttp.ts"
import { InvalidTaskRequest } from "./Errors.ts"
import type { VideoTask } from "./Task.ts"
import { type CreateContext, type Created, Tasks } from "./Tasks.ts"

const CREATE_PATH = "/v1/video/tasks"

const DECIMAL = /^[0-9]{1,15}$/

/** What a create carries besides its key: its headers and its JSON body, read and checked. */
interface CreateRequest {
  readonly idempotencyKey: string | null
  readonly cancelAfterSeconds: number | null
  readonly body: unknown
}

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
 *
 * A create whose key this replica has cached, within its rate, takes the
 * route's quick part: the key, headers and body are checked by plain code
 * and only Tasks.createVideo runs on a fiber (QuickRequest.run), the one
 * a create cannot do without (its statement, its replay and refusals).
 */
export const fastTaskCreate = Effect.gen(function*() {
  const check = yield* makeKeyCheck
  const quickCheck = yield* makeQuickKeyCheck
  const tasks = yield* Tasks
  const { limits } = yield* AppConfig
  const readTimeoutMs = limits.body.read_timeout_s * 1000

  /** The headers, then the body, with the full path's answer to the first that is wrong. */
  const read = async (request: PlainRequest): Promise<CreateRequest | Failure> => {
    const idempotencyKey = idempotencyKeyOf(request.header("idempotency-key"))
    if (idempotencyKey instanceof InvalidTaskRequest) return idempotencyKey
    const cancelAfterSeconds = cancelAfterOf(request.header("cancel-after"))
    if (cancelAfterSeconds instanceof InvalidTaskRequest) return cancelAfterSeconds
    let bytes: Uint8Array | undefined
    try {
      bytes = await request.body(readTimeoutMs)
    } catch {
      return unreadableBody()
    }
    if (bytes === undefined) return bodyTimedOut()
    const body = parseJsonBytes(bytes)
    return Either.isLeft(body) ? body.left : { idempotencyKey, cancelAfterSeconds, body: body.right }
  }

  const accepted = (created: Created<VideoTask>) => ({
    status: 202,
    headers: acceptedHeaders("video", created, limits.poll_interval_s),
    body: created.task
  })

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
        const create = yield* Effect.promise(() => read(request))
        if (isFailure(create)) return yield* Effect.fail(create)
        const { body, ...headers } = create
        const context: CreateContext = { principal, ...headers, traceparent: yield* currentTraceparent }
        return accepted(yield* tasks.createVideo(context, body))
      }),
    quick: (_, request) => {
      const principal = quickCheck("model", request.header("authorization"), request.url, Date.now())
      if (principal === undefined) return undefined
      return async ({ run, span }) => {
        span.attribute("account.id", principal.accountId)
        span.attribute("api_key.id", principal.keyId)
        const create = await read(request)
        if (isFailure(create)) return create
        const { body, ...headers } = create
        // The server span is the current span of the fiber's path: the task continues its trace.
        const context: CreateContext = { principal, ...headers, traceparent: formatTraceparent(span) }
        const created = await run(tasks.createVideo(context, body))
        if (Exit.isSuccess(created)) return accepted(created.value)
        const error = Cause.squash(created.cause)
        if (isFailure(error)) return error
        throw error
      }
    }
  }
  return route
})
