import { FetchHttpClient, type Headers, type HttpClient, type HttpClientResponse } from "@effect/platform"
import { Cause, Effect, Exit, Layer } from "effect"
import * as Assets from "../../src/client/Assets.ts"
import { GatewayClient, type GatewayClientService } from "../../src/client/Client.ts"
import { GatewayError } from "../../src/client/Errors.ts"
import { normalize } from "../../src/client/Http.ts"
import * as Tasks from "../../src/client/Tasks.ts"
import type { TaskKind } from "../../src/tasks/Task.ts"
import { eventually, type Patience } from "./eventually.ts"
import { fetchRetryingReset, type Target } from "./wire.ts"

/**
 * How tests call the public API: the project's typed client (`src/client`,
 * `HttpApiClient` over the contract), so a request that does not match the
 * contract fails to compile and an answer that does not match it fails to
 * decode. Every helper gives the decoded answer or rejects with the client's
 * own error (`GatewayError` with status, type, code, message, request id).
 * A test that sends something wrong on purpose, or checks the wire itself,
 * uses `raw` from `./http.ts` instead.
 */

export interface Keys {
  /** The `sk-` model token (creating tasks). */
  readonly model?: string | undefined
  /** The `ak_` resource key (reading tasks, uploads, assets). */
  readonly resource?: string | undefined
}

/** An account's keys as `createAccount` (`./http.ts`) gives them. */
export interface KeyPair {
  readonly model: { readonly key: string }
  readonly resource: { readonly key: string }
}

// Fetch with the one retry of a reset kept-alive socket (see `fetchRetryingReset`).
const fetchLayer = FetchHttpClient.layer.pipe(
  Layer.provide(Layer.succeed(FetchHttpClient.Fetch, (input, init) =>
    input instanceof Request
      ? fetch(input, init)
      : fetchRetryingReset(String(input), init ?? {}) as ReturnType<typeof fetch>))
)

// Deriving a client from the contract walks every endpoint: done once per gateway and keys, not per call.
const clients = new Map<string, Promise<GatewayClientService>>()
const clientFor = (gw: Target, keys: Keys) => {
  const id = JSON.stringify([gw.url, keys.model, keys.resource])
  let client = clients.get(id)
  if (client === undefined) {
    const config = { baseUrl: gw.url, modelToken: keys.model, resourceKey: keys.resource }
    client = Effect.runPromise(GatewayClient.make(config).pipe(Effect.provide(fetchLayer)))
    clients.set(id, client)
  }
  return client
}

/** Runs one effect of the typed client against `gw` with `keys`; rejects with the client's error itself. */
export const run = async <A, E>(
  gw: Target,
  keys: Keys,
  effect: Effect.Effect<A, E, GatewayClient | HttpClient.HttpClient>
): Promise<A> => {
  const client = Layer.succeed(GatewayClient, await clientFor(gw, keys))
  const exit = await Effect.runPromiseExit(effect.pipe(Effect.provide(client), Effect.provide(fetchLayer)))
  if (Exit.isSuccess(exit)) return exit.value
  const failure = Cause.failureOption(exit.cause)
  throw failure._tag === "Some" ? failure.value : Cause.squash(exit.cause)
}

/** The `GatewayError` a typed call rejected with; fails the test when it resolved or failed otherwise. */
export const rejection = async (call: Promise<unknown>): Promise<GatewayError> => {
  const outcome = await call.then((value) => ({ value }), (error: unknown) => ({ error }))
  if ("value" in outcome) throw new Error(`expected a GatewayError, got ${JSON.stringify(outcome.value)}`)
  if (outcome.error instanceof GatewayError) return outcome.error
  throw outcome.error
}

/** A create's answer: the decoded task, its status and headers (`Location`, `Retry-After`, `Idempotent-Replayed`). */
export interface Created<T> {
  readonly task: T
  readonly status: number
  readonly headers: Headers.Headers
  readonly replayed: boolean
}

const created = <T>([task, response]: readonly [T, HttpClientResponse.HttpClientResponse]): Created<T> => ({
  task,
  status: response.status,
  headers: response.headers,
  replayed: response.headers["idempotent-replayed"] === "true"
})

const accepted = <T>(reply: Created<T>): T => {
  if (reply.status !== 202) throw new Error(`a create answered ${reply.status}, not 202`)
  return reply.task
}

const idempotency = (options: Tasks.CreateOptions | undefined) =>
  options?.idempotencyKey === undefined ? {} : { "idempotency-key": options.idempotencyKey }

// Two calls, as the payload is one of two encodings (JSON or multipart).
const postImage = (
  c: GatewayClientService,
  request: Tasks.ImageTaskRequest | FormData,
  options: Tasks.CreateOptions | undefined
) =>
  request instanceof FormData
    ? c.model.taskCreate.createImageTask({ payload: request, headers: idempotency(options), withResponse: true })
    : c.model.taskCreate.createImageTask({ payload: request, headers: idempotency(options), withResponse: true })

const isDone = (task: Tasks.AnyTask) => task.status === "succeeded" || task.status === "failed"

/**
 * The typed calls tests make, bound to a gateway and an account's keys
 * (`{ model, resource }` as strings, or `createAccount`'s result).
 */
export const api = (gw: Target, account: Keys | KeyPair) => {
  const keys: Keys = "model" in account && typeof account.model === "object"
    ? { model: (account as KeyPair).model.key, resource: (account as KeyPair).resource.key }
    : account as Keys
  const go = <A, E>(effect: Effect.Effect<A, E, GatewayClient>) => run(gw, keys, effect)
  /** Any endpoint of the contract, with the key its group takes, for what the helpers below do not name. */
  const client = <A, E>(f: (c: GatewayClientService) => Effect.Effect<A, E>) =>
    go(Effect.flatMap(GatewayClient, (c) => normalize(f(c))))
  const getTask = <K extends TaskKind>(kind: K, id: string) => go(Tasks.getTask(kind, id)).then((r) => r.task)
  return {
    keys,
    client,
    /** `POST /v1/video/tasks` with the model token: the task, and the answer's status and headers. */
    createVideoReply: (request: Tasks.VideoTaskRequest, options?: Tasks.CreateOptions) =>
      client((c) =>
        c.model.taskCreate.createVideoTask({ payload: request, headers: idempotency(options), withResponse: true })
      ).then(created),
    /** The queued task; the answer must be the contract's 202. */
    createVideo: (request: Tasks.VideoTaskRequest, options?: Tasks.CreateOptions) =>
      client((c) =>
        c.model.taskCreate.createVideoTask({ payload: request, headers: idempotency(options), withResponse: true })
      ).then(created).then(accepted),
    /** `POST /v1/image/tasks`, JSON or the multipart form of an edit. */
    createImageReply: (request: Tasks.ImageTaskRequest | FormData, options?: Tasks.CreateOptions) =>
      client((c) => postImage(c, request, options)).then(created),
    createImage: (request: Tasks.ImageTaskRequest | FormData, options?: Tasks.CreateOptions) =>
      client((c) => postImage(c, request, options)).then(created).then(accepted),
    getTask,
    getVideo: (id: string) => getTask("video", id),
    getImage: (id: string) => getTask("image", id),
    /** A task's states read until `done` holds (by default: succeeded or failed); every state seen, the last satisfying `done`. */
    waitTask: async <K extends TaskKind>(
      kind: K,
      id: string,
      done: (task: Tasks.TaskOf<K>) => boolean = isDone,
      patience: Patience = { deadlineMs: 90_000 }
    ): Promise<Array<Tasks.TaskOf<K>>> => {
      const seen: Array<Tasks.TaskOf<K>> = []
      await eventually(
        async () => {
          const task = await getTask(kind, id)
          seen.push(task)
          return done(task)
        },
        `task ${id} reaches the awaited state`,
        patience
      )
      return seen
    },
    listVideos: (params?: Tasks.VideoListParams) => go(Tasks.listVideoTasks(params)),
    listImages: (params?: Tasks.ImageListParams) => go(Tasks.listImageTasks(params)),
    queryTasks: (kind: TaskKind, ids: ReadonlyArray<string>) => go(Tasks.queryTasks(kind, ids)),
    models: () => go(Tasks.listModels),
    listAssets: (params?: Assets.AssetListParams) => go(Assets.listAssets(params)),
    getAsset: (id: string) => go(Assets.getAsset(id)),
    deleteAsset: (id: string) => go(Assets.deleteAsset(id))
  }
}
export type Api = ReturnType<typeof api>
