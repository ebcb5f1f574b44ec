import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Chunk, Clock, Effect, Fiber, Layer, Option, Schedule, Schema, type Scope, Stream } from "effect"
import { ResourceKeyAuthLive } from "../accounts/Auth.ts"
import type { RateLimited } from "../accounts/Errors.ts"
import { CurrentPrincipal } from "../accounts/Security.ts"
import { GatewayApi } from "../Api.ts"
import { AppConfig } from "../platform/AppConfig.ts"
import { Draining } from "../platform/http/Draining.ts"
import { TaskNotFound } from "./Errors.ts"
import { StreamSlots } from "./StreamSlots.ts"
import { ImageTask, type TaskKind, VideoTask } from "./Task.ts"
import { TaskStore } from "./TaskStore.ts"
import { type Observed, TaskWait } from "./TaskWait.ts"

/** `Last-Event-ID` as a change sequence; anything else (absent, not a plain integer) is no id. */
export const lastEventId = (header: string | undefined): number | undefined =>
  header !== undefined && /^\d{1,9}$/.test(header.trim()) ? Number(header.trim()) : undefined

const encoders: Record<TaskKind, (task: VideoTask | ImageTask) => Effect.Effect<unknown, unknown>> = {
  video: Schema.encodeUnknown(VideoTask),
  image: Schema.encodeUnknown(ImageTask)
}

/** One `task` event: the id is the task's change sequence, the data the query endpoint's object. */
const taskEvent = (kind: TaskKind) => (seen: Observed) =>
  Effect.map(
    Effect.orDie(encoders[kind](seen.task)),
    (json) => `id: ${seen.seq}\nevent: task\ndata: ${JSON.stringify(json)}\n\n`
  )

/**
 * `body` watched for a reader that stopped: the response pulls its next chunk
 * only once the socket took the last (Node's `drain`), so a chunk handed over
 * and not followed by a pull for `stallS` is a client that reads nothing.
 * Then the request's fiber is interrupted, which ends the stream, its watch
 * and its slot: what a stalled client holds is one pending chunk and the
 * socket's buffers, for a bounded time. Runs in the request's scope.
 */
const dropStalled = (body: Stream.Stream<Uint8Array>, stallS: number) =>
  Effect.gen(function*() {
    const request = yield* Effect.withFiberRuntime<Fiber.RuntimeFiber<unknown, unknown>>(Effect.succeed)
    const pull = yield* Stream.toPull(body)
    // When the last chunk was handed over with no pull since; undefined while a pull is waiting on the task.
    let handedAt: number | undefined
    const check = Effect.flatMap(
      Clock.currentTimeMillis,
      (now) => Effect.succeed(handedAt !== undefined && now - handedAt >= stallS * 1000)
    )
    yield* Effect.forkScoped(
      check.pipe(
        Effect.repeat({ schedule: Schedule.spaced("1 second"), until: (stalled) => stalled }),
        Effect.zipRight(Fiber.interruptFork(request))
      )
    )
    return Stream.repeatEffectChunkOption(Effect.suspend(() => {
      handedAt = undefined
      return Effect.tap(pull, () => Effect.map(Clock.currentTimeMillis, (now) => (handedAt = now)))
    }))
  })

/**
 * The live status answer of a task already found to be the caller's: a slot
 * of `slotKey`'s bound is taken (429 past it) before the answer starts, then
 * the task's states (TaskWait.observe) go out as events, with keep-alive
 * comments between, until a terminal state, the client leaving or the
 * server draining. The stream is pulled as the socket takes it, so a client
 * that does not read holds one pending event, never a growing buffer, and is
 * dropped after `stream_stall_s` (dropStalled). The
 * slot and the watch go with the request's scope. Shared by the API's
 * endpoints and the console's.
 */
export const eventStream = (
  slotKey: string,
  accountId: string,
  kind: TaskKind,
  id: string
): Effect.Effect<
  HttpServerResponse.HttpServerResponse,
  RateLimited,
  HttpServerRequest.HttpServerRequest | StreamSlots | TaskWait | Draining | AppConfig | Scope.Scope
> =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const { limits } = yield* AppConfig
    yield* (yield* StreamSlots).take(slotKey)
    const wait = yield* TaskWait
    const draining = yield* Draining
    const states = wait.observe(accountId, kind, id, lastEventId(request.headers["last-event-id"])).pipe(
      Stream.mapEffect(taskEvent(kind))
    )
    const keepAlive = Stream.fromSchedule(Schedule.spaced(`${limits.stream_keep_alive_s} seconds`)).pipe(
      Stream.as(": keep-alive\n\n")
    )
    // A comment first, so the status and headers go out at once even when a resumed stream has nothing to send yet.
    const body = Stream.merge(states, keepAlive, { haltStrategy: "left" }).pipe(
      Stream.prepend(Chunk.of(": open\n\n")),
      Stream.interruptWhen(draining.started),
      Stream.encodeText
    )
    return HttpServerResponse.stream(yield* dropStalled(body, limits.stream_stall_s), {
      contentType: "text/event-stream",
      headers: { "cache-control": "no-store", "x-accel-buffering": "no" }
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
    Layer.provide(ResourceKeyAuthLive)
  )
