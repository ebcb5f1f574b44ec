import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, Layer, Option, Schema } from "effect"
import { GatewayApi } from "../api/Api.ts"
import { BatchQuery } from "../api/TasksApi.ts"
import * as Errors from "../api/Errors.ts"
import { CurrentPrincipal } from "../api/Security.ts"
import { canonicalJson, sha256Hex } from "../domain/Digest.ts"
import { groupMultiplier, videoChargeMicros } from "../domain/Pricing.ts"
import { formatTraceparent } from "../domain/TraceContext.ts"
import type { ImageTask, TaskKind, VideoTask } from "../domain/Task.ts"
import { validateVideoRequest } from "../plugin/VideoRequest.ts"
import { AppConfig } from "../services/AppConfig.ts"
import { Registry } from "../services/Registry.ts"
import { TaskStore } from "../services/TaskStore.ts"
import { ModelKeyAuthLive, ResourceKeyAuthLive } from "./Auth.ts"
import { readJson } from "./Body.ts"
import { readListFilter } from "./TaskQuery.ts"

const MAX_IDEMPOTENCY_KEY = 128

const idempotencyKey = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
  const key = request.headers["idempotency-key"]
  if (key === undefined) return Effect.succeed(null)
  if (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY) {
    return Effect.fail(
      Errors.badRequest("invalid_request", `Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY} characters.`)
    )
  }
  return Effect.succeed(key)
})

const findOwn = <T extends VideoTask | ImageTask>(kind: TaskKind, id: string) =>
  Effect.gen(function*() {
    const principal = yield* CurrentPrincipal
    const store = yield* TaskStore
    const task = yield* store.find(principal.accountId, kind, id)
    return Option.isSome(task)
      ? task.value as T
      : yield* Errors.notFound("task_not_found", `No ${kind} task with id "${id}" under this account.`)
  })

const listOwn = <T extends VideoTask | ImageTask>(kind: TaskKind, operations: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    const principal = yield* CurrentPrincipal
    const store = yield* TaskStore
    const page = yield* store.list(principal.accountId, kind, yield* readListFilter(operations))
    return {
      object: "list" as const,
      data: page.data as ReadonlyArray<T>,
      has_more: page.hasMore,
      first_id: page.data[0]?.id ?? null,
      last_id: page.data.at(-1)?.id ?? null
    }
  })

const queryOwn = <T extends VideoTask | ImageTask>(kind: TaskKind) =>
  Effect.gen(function*() {
    const principal = yield* CurrentPrincipal
    const store = yield* TaskStore
    const { task_ids } = yield* readJson(BatchQuery)
    const found = yield* store.findMany(principal.accountId, kind, [...new Set(task_ids)])
    return { object: "list" as const, data: found.data as ReadonlyArray<T>, missing: found.missing }
  })

export const TaskReadLive = HttpApiBuilder.group(GatewayApi, "taskRead", (handlers) =>
  handlers
    .handle("listVideoTasks", () => listOwn<VideoTask>("video", ["generation"]))
    .handle("queryVideoTasks", () => queryOwn<VideoTask>("video"))
    .handle("getVideoTask", ({ path }) => findOwn<VideoTask>("video", path.task_id))
    .handle("getImageTask", ({ path }) => findOwn<ImageTask>("image", path.task_id))).pipe(
    Layer.provide(ResourceKeyAuthLive)
  )

/** 202 with `Location` and `Retry-After`; a replay also says `Idempotent-Replayed: true`. */
const accepted = (kind: TaskKind, task: VideoTask | ImageTask, replayed: boolean, pollSeconds: number) =>
  HttpServerResponse.unsafeJson(task, {
    status: 202,
    headers: {
      location: `/v1/${kind}/tasks/${task.id}`,
      "retry-after": String(pollSeconds),
      ...(replayed ? { "idempotent-replayed": "true" } : {})
    }
  })

const currentTraceparent = Effect.currentSpan.pipe(
  Effect.map(formatTraceparent),
  Effect.orElseSucceed(() => null)
)

const createVideo = Effect.gen(function*() {
  const principal = yield* CurrentPrincipal
  const registry = yield* Registry
  const store = yield* TaskStore
  const { groups, limits } = yield* AppConfig
  const body = yield* readJson(Schema.Unknown)
  const request = yield* validateVideoRequest((id) => registry.video(id)?.capability, body)
  const key = yield* idempotencyKey
  const served = registry.video(request.model)!
  const { task, replayed } = yield* store.create({
    accountId: principal.accountId,
    kind: "video",
    model: request.model,
    operation: request.operation,
    request,
    clientReferenceId: request.clientReferenceId,
    metadata: request.metadata,
    idempotencyKey: key,
    digest: yield* Effect.promise(() => sha256Hex(canonicalJson(body))),
    chargeMicros: videoChargeMicros(
      served.settings.price_per_second,
      request.duration,
      groupMultiplier(groups, principal.group)
    ),
    subscriptionAllowed: served.settings.subscription,
    channel: served.settings.generator,
    traceparent: yield* currentTraceparent
  })
  yield* Effect.annotateCurrentSpan({ "task.id": task.id, "task.model": task.model, "task.replayed": replayed })
  return accepted("video", task, replayed, limits.poll_interval_s)
})

/** Image models arrive with the image plugins; until then every image model is unknown. */
const ImageModelOnly = Schema.Struct({ model: Schema.String }).pipe(
  Schema.extend(Schema.Record({ key: Schema.String, value: Schema.Unknown }))
)

export const TaskCreateLive = HttpApiBuilder.group(GatewayApi, "taskCreate", (handlers) =>
  handlers
    .handle("createVideoTask", () => createVideo)
    .handle("createImageTask", () =>
      Effect.flatMap(readJson(ImageModelOnly), (req) =>
        Errors.badRequest("unsupported_image_model", `Model "${req.model}" is not available.`)))).pipe(
    Layer.provide(ModelKeyAuthLive)
  )
