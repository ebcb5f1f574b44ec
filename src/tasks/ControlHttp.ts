import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { ResourceKeyAuthLive } from "../accounts/Auth.ts"
import { CurrentPrincipal } from "../accounts/Security.ts"
import { GatewayApi } from "../Api.ts"
import type { ImageTask, TaskKind, VideoTask } from "./Task.ts"
import { TaskCancel } from "./TaskCancel.ts"

/** Cancels a task of the caller's account: the task object, 404 or 409 (TaskCancel.ts). */
const cancelOwn = <T extends VideoTask | ImageTask>(kind: TaskKind, id: string) =>
  Effect.gen(function*() {
    const principal = yield* CurrentPrincipal
    const task = yield* Effect.flatMap(TaskCancel, (tasks) => tasks.cancel(principal.accountId, kind, id))
    return task as T
  })

export const TaskControlLive = HttpApiBuilder.group(GatewayApi, "taskControl", (handlers) =>
  handlers
    .handle("cancelVideoTask", ({ path }) => cancelOwn<VideoTask>("video", path.task_id))
    .handle("cancelImageTask", ({ path }) => cancelOwn<ImageTask>("image", path.task_id))).pipe(
    Layer.provide(ResourceKeyAuthLive)
  )
