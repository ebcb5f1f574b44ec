import { Cause, Effect, Exit, Option, Schema } from "effect"
import { makeKeyCheck, makeQuickKeyCheck } from "../accounts/Auth.ts"
import { InvalidApiKey } from "../accounts/Errors.ts"
import type { FastRoute, QuickRequest } from "../platform/http/FastRoutes.ts"
import { storableSegment } from "../platform/http/Middleware.ts"
import { TaskNotFound } from "./Errors.ts"
import { ImageTask, type TaskKind, VideoTask } from "./Task.ts"
import { type FoundWithKey, TaskStore } from "./TaskStore.ts"

const TASK_PATH = /^\/v1\/(video|image)\/tasks\/([^/]+)$/

const isRefusal = (answer: object): answer is InvalidApiKey | TaskNotFound =>
  answer instanceof InvalidApiKey || answer instanceof TaskNotFound

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
  const quickCheck = yield* makeQuickKeyCheck
  const store = yield* TaskStore
  const encode: Record<TaskKind, (task: VideoTask | ImageTask) => Effect.Effect<unknown, unknown>> = {
    video: Schema.encodeUnknown(VideoTask),
    image: Schema.encodeUnknown(ImageTask)
  }
  const encodeNow: Record<TaskKind, (task: VideoTask | ImageTask) => unknown> = {
    video: Schema.encodeUnknownSync(VideoTask),
    image: Schema.encodeUnknownSync(ImageTask)
  }
  const findWithKeyNow = store.findWithKeyNow
  /** The read without a fiber where the database allows (PostgreSQL), else on a fiber of the request's (PGlite). */
  const readNow = async (
    keyId: string,
    kind: TaskKind,
    id: string,
    run: QuickRequest["run"],
    trace: QuickRequest["trace"]
  ) => {
    if (findWithKeyNow !== undefined) return findWithKeyNow(keyId, kind, id, trace)
    const read = await run(store.findWithKey(keyId, kind, id))
    if (Exit.isFailure(read)) throw Cause.squash(read.cause)
    return read.value
  }
  /** The answer to the task's row read with the key's state, on either path. */
  const answerOf = (
    kind: TaskKind,
    id: string,
    found: Option.Option<FoundWithKey>
  ): VideoTask | ImageTask | InvalidApiKey | TaskNotFound => {
    const row = Option.getOrUndefined(found)
    if (row === undefined || !row.keyEnabled) return new InvalidApiKey()
    return Option.isSome(row.task) ? row.task.value : TaskNotFound.of(kind, id)
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
        const task = answerOf(kind as TaskKind, id, yield* store.findWithKey(principal.keyId, kind as TaskKind, id))
        if (isRefusal(task)) return yield* Effect.fail(task)
        const body = yield* Effect.orDie(encode[kind as TaskKind](task))
        return { status: 200, body }
      }),
    // A key in this replica's cache, within its rate, and an id that can be stored: the poll of every client.
    quick: ([kind, segment], request) => {
      const id = storableSegment(segment!)
      if (id === undefined) return undefined
      const principal = quickCheck("resource", request.header("authorization"), request.url, Date.now())
      if (principal === undefined) return undefined
      return async ({ run, span, trace }) => {
        span.attribute("account.id", principal.accountId)
        span.attribute("api_key.id", principal.keyId)
        const found = await readNow(principal.keyId, kind as TaskKind, id, run, trace)
        const task = answerOf(kind as TaskKind, id, found)
        return isRefusal(task) ? task : { status: 200, body: encodeNow[kind as TaskKind](task) }
      }
    }
  }
  return route
})
