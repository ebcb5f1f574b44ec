import type { HttpClientResponse } from "@effect/platform"
import { Effect } from "effect"
import type { VideoCreateRequest } from "../catalog/VideoCreateRequest.ts"
import type { TaskQuote as TaskQuoteSchema } from "../tasks/QuoteApi.ts"
import type { ImageCreateRequest } from "../tasks/Requests.ts"
import type { ImageTask, TaskKind, VideoTask } from "../tasks/Task.ts"
import { type ApiClient, GatewayClient } from "./Client.ts"
import { normalize, retryAfterSeconds } from "./Http.ts"

export type VideoTaskRequest = typeof VideoCreateRequest.Type
export type ImageTaskRequest = ImageCreateRequest
export type TaskOf<K extends TaskKind> = K extends "video" ? VideoTask : ImageTask
export type AnyTask = VideoTask | ImageTask

/** A task as one answer carried it, with the polling interval the gateway suggested. */
export interface TaskReply<T> {
  readonly task: T
  /** Seconds, from `Retry-After`, when the answer had one. */
  readonly retryAfter: number | undefined
  /** `Idempotent-Replayed: true`: the Idempotency-Key named a task created before. */
  readonly replayed: boolean
}

export interface CreateOptions {
  readonly idempotencyKey?: string | undefined
  /**
   * `Cancel-After`: the task is cancelled (and refunded) if it has not ended
   * by then: `45s`, `10m`, `2h`, or a number of seconds, from 10 s to 48 h.
   */
  readonly cancelAfter?: string | number | undefined
}

const reply = <T>([task, response]: readonly [T, HttpClientResponse.HttpClientResponse]): TaskReply<T> => ({
  task,
  retryAfter: retryAfterSeconds(response),
  replayed: response.headers["idempotent-replayed"] === "true"
})

const headers = (options: CreateOptions | undefined) => ({
  ...(options?.idempotencyKey === undefined ? {} : { "idempotency-key": options.idempotencyKey }),
  ...(options?.cancelAfter === undefined ? {} : { "cancel-after": String(options.cancelAfter) })
})

/** Runs one call of the contract with the key its endpoint takes, failing only with the client's errors. */
export const withClient = <A, E>(f: (client: ApiClient) => Effect.Effect<A, E>, key: "model" | "resource") =>
  Effect.flatMap(GatewayClient, (c) => normalize(f(key === "model" ? c.model : c.resource)))

/** `POST /v1/video/tasks` with the model token; 202 with the queued task. */
export const createVideoTask = (request: VideoTaskRequest, options?: CreateOptions) =>
  withClient(
    (c) => c.taskCreate.createVideoTask({ payload: request, headers: headers(options), withResponse: true }),
    "model"
  )
    .pipe(Effect.map(reply))

/**
 * `POST /v1/image/tasks` with the model token: the JSON form, or the multipart
 * form of an edit as `FormData` (fields `model`, `operation`, `prompt`,
 * `image` files, `mask`, `size`, `quality`, `output_format`).
 */
export const createImageTask = (request: ImageTaskRequest | FormData, options?: CreateOptions) =>
  withClient((c) =>
    request instanceof FormData
      ? c.taskCreate.createImageTask({ payload: request, headers: headers(options), withResponse: true })
      : c.taskCreate.createImageTask({ payload: request, headers: headers(options), withResponse: true }), "model")
    .pipe(Effect.map(reply))

export type TaskQuote = typeof TaskQuoteSchema.Type

/**
 * `POST /v1/video/tasks/quote` with the model token: what creating this
 * request would charge and whether the balances cover it now; nothing is
 * created. Refused with the create's own 400s.
 */
export const quoteVideoTask = (request: VideoTaskRequest) =>
  withClient((c): Effect.Effect<TaskQuote, unknown> => c.taskQuote.quoteVideoTask({ payload: request }), "model")

/** `POST /v1/image/tasks/quote`: the same for an image request, in either form of the create. */
export const quoteImageTask = (request: ImageTaskRequest | FormData) =>
  withClient(
    (c): Effect.Effect<TaskQuote, unknown> =>
      request instanceof FormData
        ? c.taskQuote.quoteImageTask({ payload: request })
        : c.taskQuote.quoteImageTask({ payload: request }),
    "model"
  )

/** `GET /v1/{kind}/tasks/{id}` with the resource key. */
export const getTask = <K extends TaskKind>(kind: K, id: string) =>
  withClient(
    (c): Effect.Effect<readonly [AnyTask, HttpClientResponse.HttpClientResponse], unknown> =>
      kind === "video"
        ? c.taskRead.getVideoTask({ path: { task_id: id }, withResponse: true })
        : c.taskRead.getImageTask({ path: { task_id: id }, withResponse: true }),
    "resource"
  ).pipe(Effect.map((answer) => reply(answer as readonly [TaskOf<K>, HttpClientResponse.HttpClientResponse])))

/**
 * `POST /v1/{kind}/tasks/{id}/cancel` with the resource key: the task, ended
 * `failed` with `task_cancelled` (or as it already was, if it was cancelled
 * before); a task that cannot be cancelled fails with 409 `task_not_cancellable`.
 */
export const cancelTask = <K extends TaskKind>(kind: K, id: string) =>
  withClient(
    (c): Effect.Effect<AnyTask, unknown> =>
      kind === "video"
        ? c.taskControl.cancelVideoTask({ path: { task_id: id } })
        : c.taskControl.cancelImageTask({ path: { task_id: id } }),
    "resource"
  ).pipe(Effect.map((task) => task as TaskOf<K>))

export type VideoListParams = Parameters<ApiClient["taskRead"]["listVideoTasks"]>[0]["urlParams"]
export type ImageListParams = Parameters<ApiClient["taskRead"]["listImageTasks"]>[0]["urlParams"]

/** One page of the caller's tasks, newest first (docs/api.md, Lists). */
export const listVideoTasks = (params: VideoListParams = {}) =>
  withClient((c) => c.taskRead.listVideoTasks({ urlParams: params }), "resource")
export const listImageTasks = (params: ImageListParams = {}) =>
  withClient((c) => c.taskRead.listImageTasks({ urlParams: params }), "resource")

/** Batch query: found tasks in request order and the ids not found. */
export const queryTasks = (kind: TaskKind, ids: ReadonlyArray<string>) =>
  withClient(
    (c): Effect.Effect<{ readonly data: ReadonlyArray<AnyTask>; readonly missing: ReadonlyArray<string> }, unknown> =>
      kind === "video"
        ? c.taskRead.queryVideoTasks({ payload: { task_ids: ids } })
        : c.taskRead.queryImageTasks({ payload: { task_ids: ids } }),
    "resource"
  )

/** `GET /v1/models`: either key works; the resource key is used when no model token is set. */
export const listModels = Effect.flatMap(
  GatewayClient,
  (c) => normalize((c.config.modelToken === undefined ? c.resource : c.model).models.listModels())
)
