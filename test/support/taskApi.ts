import { Chunk, Effect, Stream } from "effect"
import type { GatewayError } from "../../src/client/Errors.ts"
import * as Tasks from "../../src/client/Tasks.ts"
import { type WatchOptions, watchTask } from "../../src/client/Watch.ts"
import type { TaskKind } from "../../src/tasks/Task.ts"
import { api, type KeyPair, type Keys, rejection, run } from "./api.ts"
import type { Target } from "./wire.ts"

/**
 * `api(gw, account)` (`./api.ts`) with the task control calls named: cancel,
 * create with `Cancel-After`, quote, and the status stream as the client's
 * `watchTask` reads it. Every answer decoded; a refusal rejects with
 * `GatewayError`.
 */
export const taskApi = (gw: Target, account: Keys | KeyPair) => {
  const base = api(gw, account)
  const { client, keys } = base
  const headers = (options: Tasks.CreateOptions) => ({
    ...(options.idempotencyKey === undefined ? {} : { "idempotency-key": options.idempotencyKey }),
    ...(options.cancelAfter === undefined ? {} : { "cancel-after": String(options.cancelAfter) })
  })
  return {
    ...base,
    /** `POST /v1/{kind}/tasks/{id}/cancel` with the resource key: the task as it ended. */
    cancel: <K extends TaskKind>(kind: K, id: string) => run(gw, keys, Tasks.cancelTask(kind, id)),
    cancelVideo: (id: string) => run(gw, keys, Tasks.cancelTask("video", id)),
    /** `POST /v1/video/tasks` with its headers (`Idempotency-Key`, `Cancel-After`): the task, status and headers. */
    createVideoWith: (request: Tasks.VideoTaskRequest, options: Tasks.CreateOptions) =>
      client((c) =>
        c.model.taskCreate.createVideoTask({ payload: request, headers: headers(options), withResponse: true })
      ).then(([task, response]) => ({ task, status: response.status, headers: response.headers })),
    /** `POST /v1/image/tasks` (JSON form) with its headers: the task, status and headers. */
    createImageWith: (request: Tasks.ImageTaskRequest, options: Tasks.CreateOptions) =>
      client((c) =>
        c.model.taskCreate.createImageTask({ payload: request, headers: headers(options), withResponse: true })
      ).then(([task, response]) => ({ task, status: response.status, headers: response.headers })),
    /** `POST /v1/video/tasks/quote` with the model token. */
    quoteVideo: (request: Tasks.VideoTaskRequest) => run(gw, keys, Tasks.quoteVideoTask(request)),
    /** `POST /v1/image/tasks/quote`, JSON or multipart. */
    quoteImage: (request: Tasks.ImageTaskRequest | FormData) => run(gw, keys, Tasks.quoteImageTask(request)),
    /** Every state the status stream sent (`watchTask`), until it ended. */
    watch: <K extends TaskKind>(kind: K, id: string, options?: WatchOptions) =>
      run(gw, keys, Stream.runCollect(watchTask(kind, id, options)).pipe(Effect.map(Chunk.toReadonlyArray)))
  }
}
export type TaskApi = ReturnType<typeof taskApi>

/**
 * The `GatewayError` a typed call rejected with, checked as `expectError`
 * (`./http.ts`) checks an error body: its status, code, type when given, a
 * message and the request id.
 */
export const refused = async (call: Promise<unknown>, status: number, code: string, type?: string) => {
  const error = await rejection(call)
  const problems: Array<string> = []
  if (error.status !== status) problems.push(`status ${error.status} != ${status}`)
  if (error.code !== code) problems.push(`code ${error.code} != ${code}`)
  if (type !== undefined && error.type !== type) problems.push(`type ${error.type} != ${type}`)
  if (error.message.length === 0) problems.push("empty message")
  if (!error.request_id) problems.push("no request id")
  if (problems.length) throw new Error(`${problems.join("; ")}: ${error.message}`)
  return error
}

/** A refusal's error as the answer's body carried it, for checks of what the caller saw. */
export const errorBody = (error: GatewayError) => ({
  error: { code: error.code, type: error.type, message: error.message, request_id: error.request_id }
})
