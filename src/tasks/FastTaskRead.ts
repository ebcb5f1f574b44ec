import { Effect, Option, Schema } from "effect"
import { makeKeyCheck } from "../accounts/Auth.ts"
import { InvalidApiKey } from "../accounts/Errors.ts"
import type { FastRoute } from "../platform/http/FastRoutes.ts"
import { storableSegment } from "../platform/http/Middleware.ts"
import { TaskNotFound } from "./Errors.ts"
import { ImageTask, type TaskKind, VideoTask } from "./Task.ts"
import { TaskStore } from "./TaskStore.ts"

const TASK_PATH = /^\/v1\/(video|image)\/tasks\/([^/]+)$/

/** The answer of `taskPath`'s ResourceId (tasks/Api.ts) to an id that cannot be stored. */
const noSuchTask = () => new TaskNotFound({ message: "No such task." })

/**
 * `GET /v1/video/tasks/{id}` and `GET /v1/image/tasks/{id}` as a fast route
 * (platform/http/FastRoutes.ts): the same steps as the contract's endpoints
 * `getVideoTask` and `getImageTask` under ResourceKeyAuth (an impossible id
 * is not found before the key is checked, as the gateway middleware does),
 * and the same success schema's encoding.
 *
 * The task is read with the key's current state (TaskStore.findWithKey), so
 * a key disabled through another replica, still in this replica's key cache
 * until the disable's notification arrives, is refused here at once: the
 * polling path is where a leaked key is most used.
 */
export const fastTaskRead = Effect.gen(function*() {
  const check = yield* makeKeyCheck
  const store = yield* TaskStore
  const encode: Record<TaskKind, (task: VideoTask | ImageTask) => Effect.Effect<unknown, unknown>> = {
    video: Schema.encodeUnknown(VideoTask),
    image: Schema.encodeUnknown(ImageTask)
  }
  const route: FastRoute<never> = {
    match: (method, path) => {
      if (method !== "GET") return undefined
      const found = TASK_PATH.exec(path)
      return found === null ? undefined : [found[1]!, found[2]!]
    },
    template: ([kind]) => kind === "video" ? "/v1/video/tasks/:task_id" : "/v1/image/tasks/:task_id",
    answer: ([kind, segment], request) =>
      Effect.gen(function*() {
        const id = storableSegment(segment!)
        if (id === undefined) return yield* noSuchTask()
        const principal = yield* check("resource", request.header("authorization"), request.url)
        const found = Option.getOrUndefined(yield* store.findWithKey(principal.keyId, kind as TaskKind, id))
        if (found === undefined || !found.keyEnabled) return yield* new InvalidApiKey()
        const task = Option.isSome(found.task) ? found.task.value : yield* TaskNotFound.of(kind as TaskKind, id)
        const body = yield* Effect.orDie(encode[kind as TaskKind](task))
        return { status: 200, body }
      })
  }
  return route
})
