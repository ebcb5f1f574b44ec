import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer, Option, Schema } from "effect"
import { ModelKeyAuthLive, ResourceKeyAuthLive } from "../accounts/Auth.ts"
import { CurrentPrincipal } from "../accounts/Security.ts"
import { GatewayApi } from "../Api.ts"
import { chargeMicros, groupMultiplier } from "../billing/Pricing.ts"
import { routeTaking } from "../catalog/Narrower.ts"
import { Registry } from "../catalog/Registry.ts"
import { validateVideoRequest } from "../catalog/VideoRequest.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { canonicalJson, Sha256 } from "../platform/Digest.ts"
import { readJson } from "../platform/http/Body.ts"
import { BatchQuery } from "./Api.ts"
import { TaskNotFound } from "./Errors.ts"
import { createImage } from "./ImageTasks.ts"
import { ReferenceMedia } from "./ReferenceMedia.ts"
import type { ImageTask, TaskKind, VideoTask } from "./Task.ts"
import { accepted, currentTraceparent, idempotencyKey } from "./TaskCreation.ts"
import { readListFilter } from "./TaskQuery.ts"
import { TaskStore } from "./TaskStore.ts"

/** A task of the caller's account (CurrentPrincipal), or the contract's 404. */
const findOwn = <T extends VideoTask | ImageTask>(kind: TaskKind, id: string) =>
  Effect.gen(function*() {
    const principal = yield* CurrentPrincipal
    const store = yield* TaskStore
    const task = yield* store.find(principal.accountId, kind, id)
    return Option.isSome(task) ? task.value as T : yield* TaskNotFound.of(kind, id)
  })

const listOwn = <T extends VideoTask | ImageTask>(kind: TaskKind) =>
  Effect.gen(function*() {
    const principal = yield* CurrentPrincipal
    const store = yield* TaskStore
    const page = yield* store.list(principal.accountId, kind, yield* readListFilter(kind))
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
    .handle("listVideoTasks", () => listOwn<VideoTask>("video"))
    .handle("queryVideoTasks", () => queryOwn<VideoTask>("video"))
    .handle("getVideoTask", ({ path }) => findOwn<VideoTask>("video", path.task_id))
    .handle("listImageTasks", () => listOwn<ImageTask>("image"))
    .handle("queryImageTasks", () => queryOwn<ImageTask>("image"))
    .handle("getImageTask", ({ path }) => findOwn<ImageTask>("image", path.task_id))).pipe(
    Layer.provide(ResourceKeyAuthLive)
  )

const createVideo = Effect.gen(function*() {
  const principal = yield* CurrentPrincipal
  const registry = yield* Registry
  const store = yield* TaskStore
  const { groups, limits } = yield* AppConfig
  const body = yield* readJson(Schema.Unknown)
  const request = yield* validateVideoRequest((id) => registry.video(id)?.capability, body)
  // Confirmed uploads are checked against the model's media table before idempotency and charge.
  yield* Effect.flatMap(ReferenceMedia, (r) => r.checkAtCreation(registry.video(request.model)!.capability, request))
  const served = registry.video(request.model)!
  // A channel may take less than the model's table (catalog/Narrower.ts): the task goes to the first that takes it.
  const route = yield* routeTaking(served.routes, body)
  const key = yield* idempotencyKey
  const { task, replayed } = yield* store.create({
    accountId: principal.accountId,
    kind: "video",
    model: request.model,
    operation: request.operation,
    request,
    clientReferenceId: request.clientReferenceId,
    metadata: request.metadata,
    idempotencyKey: key,
    digest: yield* Effect.flatMap(Sha256, (sha) => sha.hex(canonicalJson(body))),
    chargeMicros: chargeMicros(
      served.price,
      request.duration,
      groupMultiplier(groups, principal.group)
    ),
    subscriptionAllowed: served.settings.subscription,
    // The first channel that takes it; failover to the next is the engine's business.
    channel: route.channel,
    traceparent: yield* currentTraceparent
  })
  yield* Effect.annotateCurrentSpan({ "task.id": task.id, "task.model": task.model, "task.replayed": replayed })
  return accepted("video", task, replayed, limits.poll_interval_s)
})

export const TaskCreateLive = HttpApiBuilder.group(GatewayApi, "taskCreate", (handlers) =>
  handlers
    .handle("createVideoTask", () => createVideo)
    .handle("createImageTask", () => createImage)).pipe(
    Layer.provide(ModelKeyAuthLive)
  )
