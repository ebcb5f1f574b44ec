import { HttpApiBuilder, HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Chunk, Effect, Layer, Option, Schedule, Schema, Stream } from "effect"
import { ResourceKeyAuthLive } from "../accounts/Auth.ts"
import { CurrentPrincipal } from "../accounts/Security.ts"
import { GatewayApi } from "../Api.ts"
import { Draining } from "../platform/http/Draining.ts"
import { TaskNotFound } from "./Errors.ts"
import { StreamSlots } from "./StreamSlots.ts"
import { ImageTask, type TaskKind, VideoTask } from "./Task.ts"
import { TaskStore } from "./TaskStore.ts"
import { type Observed, TaskWait } from "./TaskWait.ts"

/** A comment line every this often, so proxies and clients see a quiet stream is alive. */
export const KEEP_ALIVE = "15 seconds"

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
 * The live status answer of a task already found to be the caller's: a slot
 * of `slotKey`'s bound is taken (429 past it) before the answer starts, then
 * the task's states (TaskWait.observe) go out as events, with keep-alive
 * comments between, until a terminal state, the client leaving or the
 * server draining. The stream is pulled as the socket takes it, so a client
 * that does not read holds one pending event, never a growing buffer. The
 * slot and the watch go with the request's scope. Shared by the API's
 * endpoints and the console's.
 */
export const eventStream = (slotKey: string, accountId: string, kind: TaskKind, id: string) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    yield* (yield* StreamSlots).take(slotKey)
    const wait = yield* TaskWait
    const draining = yield* Draining
    const states = wait.observe(accountId, kind, id, lastEventId(request.headers["last-event-id"])).pipe(
      Stream.mapEffect(taskEvent(kind))
    )
    const keepAlive = Stream.fromSchedule(Schedule.spaced(KEEP_ALIVE)).pipe(Stream.as(": keep-alive\n\n"))
    // A comment first, so the status and headers go out at once even when a resumed stream has nothing to send yet.
    const body = Stream.merge(states, keepAlive, { haltStrategy: "left" }).pipe(
      Stream.prepend(Chunk.of(": open\n\n")),
      Stream.interruptWhen(draining.started),
      Stream.encodeText
    )
    return HttpServerResponse.stream(body, {
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
