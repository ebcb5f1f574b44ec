import { Context, Effect, Option } from "effect"
import { makeKeyCheck } from "../accounts/Auth.ts"
import type { FastRoute } from "../platform/http/FastRoutes.ts"
import { storableSegment } from "../platform/http/Middleware.ts"
import { TaskNotFound } from "./Errors.ts"
import { lastEventId, LiveStreams, openLiveStream, STREAM_HEADERS } from "./LiveStreams.ts"
import { StreamSlots } from "./StreamSlots.ts"
import type { TaskKind } from "./Task.ts"
import { TaskStore } from "./TaskStore.ts"
import { TaskWait } from "./TaskWait.ts"

const EVENTS_PATH = /^\/v1\/(video|image)\/tasks\/([^/]+)\/events$/

/** The answer of `taskPath`'s ResourceId (tasks/Api.ts) to an id that cannot be stored. */
const noSuchTask = () => new TaskNotFound({ message: "No such task." })

/**
 * `GET /v1/video/tasks/{id}/events` and `GET /v1/image/tasks/{id}/events` as
 * a fast route (platform/http/FastRoutes.ts): the same steps as the
 * contract's endpoints (EventsHttp.ts) under ResourceKeyAuth (an impossible
 * id is not found before the key is checked, as the gateway middleware
 * does): the key and the read rate limit, the task looked up for the
 * caller's account (404), the key's bound of open streams (429), then the
 * stream, which the server writes itself. Nothing of the HttpApi stack
 * stays with an open stream (no request fiber, no scope, no server span held
 * open): an idle stream is its connection, its LiveStream and its place among
 * the task's followers. Its slot, stream and following are released when the
 * server says the answer is over, however it ended. The stream's services are
 * provided to the answer from a context of just those three (FastRoutes.layer
 * runs answers with an empty context).
 */
export const fastTaskEvents = Effect.gen(function*() {
  const check = yield* makeKeyCheck
  const store = yield* TaskStore
  const services = Context.make(StreamSlots, yield* StreamSlots).pipe(
    Context.add(LiveStreams, yield* LiveStreams),
    Context.add(TaskWait, yield* TaskWait)
  )
  const route: FastRoute<never> = {
    match: (method, path) => {
      if (method !== "GET") return undefined
      const found = EVENTS_PATH.exec(path)
      return found === null ? undefined : [found[1]!, found[2]!]
    },
    template: ([kind]) => kind === "video" ? "/v1/video/tasks/:task_id/events" : "/v1/image/tasks/:task_id/events",
    answer: ([kind, segment], request) =>
      Effect.gen(function*() {
        const id = storableSegment(segment!)
        if (id === undefined) return yield* noSuchTask()
        const principal = yield* check("resource", request.header("authorization"), request.url)
        const found = yield* store.find(principal.accountId, kind as TaskKind, id)
        if (Option.isNone(found)) return yield* TaskNotFound.of(kind as TaskKind, id)
        const after = lastEventId(request.header("last-event-id"))
        const { close, stream } = yield* openLiveStream(
          principal.keyId,
          principal.accountId,
          kind as TaskKind,
          id,
          after
        )
        return { status: 200, headers: STREAM_HEADERS, stream: stream.served(close) }
      }).pipe(Effect.provide(services))
  }
  return route
})
