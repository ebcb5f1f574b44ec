import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect, type Fiber, Layer, Option, type Scope } from "effect"
import { ResourceKeyAuthLive } from "../accounts/Auth.ts"
import type { RateLimited } from "../accounts/Errors.ts"
import { CurrentPrincipal } from "../accounts/Security.ts"
import { GatewayApi } from "../Api.ts"
import { TaskNotFound } from "./Errors.ts"
import { lastEventId, LiveStreams, openLiveStream, STREAM_HEADERS } from "./LiveStreams.ts"
import type { StreamSlots } from "./StreamSlots.ts"
import type { TaskKind } from "./Task.ts"
import { TaskStore } from "./TaskStore.ts"
import type { TaskWait } from "./TaskWait.ts"

/**
 * The live status answer of a task already found to be the caller's, through
 * the HttpApi stack (openLiveStream: 429 past the key's bound, then the
 * stream); a client that stalls has the request's fiber interrupted. The
 * contract's endpoints are answered by the fast route (FastTaskEvents.ts)
 * unless the request has a query string or a `Prefer` header; the console's
 * always come here.
 */
export const eventStream = (
  slotKey: string,
  accountId: string,
  kind: TaskKind,
  id: string
): Effect.Effect<
  HttpServerResponse.HttpServerResponse,
  RateLimited,
  HttpServerRequest.HttpServerRequest | StreamSlots | TaskWait | LiveStreams | Scope.Scope
> =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const fiber = yield* Effect.withFiberRuntime<Fiber.RuntimeFiber<unknown, unknown>>(Effect.succeed)
    const after = lastEventId(request.headers["last-event-id"])
    const { stream } = yield* Effect.acquireRelease(
      openLiveStream(slotKey, accountId, kind, id, after),
      ({ close }) => Effect.sync(close)
    )
    const { "content-type": contentType, ...headers } = STREAM_HEADERS
    return HttpServerResponse.stream(stream.body(() => fiber.unsafeInterruptAsFork(fiber.id())), {
      contentType,
      headers
    })
  })

/** `GET /v1/{kind}/tasks/{id}/events`: 404 for another account's or an unknown task, then the stream (key's bound). */
const events = (kind: TaskKind, id: string) =>
  Effect.gen(function*() {
    const principal = yield* CurrentPrincipal
    const found = yield* (yield* TaskStore).find(principal.accountId, kind, id)
    if (Option.isNone(found)) return yield* TaskNotFound.of(kind, id)
    return yield* eventStream(principal.keyId, principal.accountId, kind, id)
  }).pipe(Effect.withSpan("TaskEvents.open", { attributes: { "task.id": id, "task.kind": kind } }))

export const TaskEventsLive = HttpApiBuilder.group(GatewayApi, "taskEvents", (handlers) =>
  handlers
    .handle("videoTaskEvents", ({ path }) => events("video", path.task_id))
    .handle("imageTaskEvents", ({ path }) => events("image", path.task_id))).pipe(
    Layer.provide(ResourceKeyAuthLive),
    // The same instance as the console's (layers are memoised by reference): one ticker for every stream.
    Layer.provide(LiveStreams.layer)
  )
