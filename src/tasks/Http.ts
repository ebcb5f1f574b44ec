import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer, Option } from "effect"
import { ResourceKeyAuthLive } from "../accounts/Auth.ts"
import { CurrentPrincipal } from "../accounts/Security.ts"
import { GatewayApi } from "../Api.ts"
import { readJson } from "../platform/http/Body.ts"
import { BatchQuery } from "./Api.ts"
import { TaskNotFound } from "./Errors.ts"
import { longPoll } from "./LongPollHttp.ts"
import type { ImageTask, TaskKind, VideoTask } from "./Task.ts"
import { readListFilter } from "./TaskQueryHttp.ts"
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
    .handle("getVideoTask", ({ path }) => Effect.flatMap(findOwn<VideoTask>("video", path.task_id), longPoll("video")))
    .handle("listImageTasks", () => listOwn<ImageTask>("image"))
    .handle("queryImageTasks", () => queryOwn<ImageTask>("image"))
    .handle("getImageTask", ({ path }) => Effect.flatMap(findOwn<ImageTask>("image", path.task_id), longPoll("image"))))
  .pipe(
    Layer.provide(ResourceKeyAuthLive)
  )
