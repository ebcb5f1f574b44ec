import { HttpClientRequest } from "@effect/platform"
import { Duration, Effect, Option, type ParseResult, Schema, Stream } from "effect"
import { ImageTask, type TaskKind, VideoTask } from "../tasks/Task.ts"
import { GatewayClient } from "./Client.ts"
import { type ClientError, GatewayError, NetworkError, TaskFailed, WaitTimeout } from "./Errors.ts"
import type { TaskOf } from "./Tasks.ts"
import type { WaitOptions } from "./Wait.ts"

export interface WatchOptions {
  /** Resume after this event id (an earlier stream's); the current state is sent only when newer. */
  readonly lastEventId?: string | undefined
}

/** Dropped connections, 429s and 5xx answers in a row that a watch rides out before it fails. */
const MAX_TRANSIENT = 5
/** Seconds before reconnecting when the gateway suggests none. */
const RECONNECT_S = 1

const isTransient = (error: ClientError) => error._tag === "NetworkError" || error.status === 429 || error.status >= 500

const decoders: Record<TaskKind, (data: string) => Effect.Effect<VideoTask | ImageTask, ParseResult.ParseError>> = {
  video: Schema.decodeUnknown(Schema.parseJson(VideoTask)),
  image: Schema.decodeUnknown(Schema.parseJson(ImageTask))
}

interface Event {
  readonly id: string | undefined
  readonly event: string
  readonly data: string
}

/** Server-sent events from the lines of a stream (comments and unknown fields skipped). */
const events = <E, R>(lines: Stream.Stream<string, E, R>): Stream.Stream<Event, E, R> =>
  lines.pipe(
    Stream.mapAccum(
      { id: undefined as string | undefined, event: "message", data: [] as Array<string> },
      (acc, line) => {
        if (line === "") {
          const out = acc.data.length > 0
            ? Option.some({ id: acc.id, event: acc.event, data: acc.data.join("\n") })
            : Option.none()
          return [{ id: acc.id, event: "message", data: [] }, out]
        }
        if (line.startsWith(":")) return [acc, Option.none()]
        const colon = line.indexOf(":")
        const field = colon < 0 ? line : line.slice(0, colon)
        const value = colon < 0 ? "" : line.slice(colon + 1).replace(/^ /, "")
        if (field === "id") return [{ ...acc, id: value }, Option.none()]
        if (field === "event") return [{ ...acc, event: value }, Option.none()]
        if (field === "data") return [{ ...acc, data: [...acc.data, value] }, Option.none()]
        return [acc, Option.none()]
      }
    ),
    Stream.filterMap((e) => e)
  )

/**
 * `GET /v1/{kind}/tasks/{id}/events` with the resource key, as a stream of
 * the task's states: the current one, each change of status or progress,
 * and the terminal state, after which the stream ends. A dropped connection
 * (or a 429 or 5xx answer) is reconnected with `Last-Event-ID`, so no state
 * is sent twice; after MAX_TRANSIENT in a row without an event it fails.
 * Other answers (404 `task_not_found`, 401) fail at once.
 */
export const watchTask = <K extends TaskKind>(
  kind: K,
  id: string,
  options: WatchOptions = {}
): Stream.Stream<TaskOf<K>, ClientError, GatewayClient> =>
  Stream.unwrap(Effect.map(GatewayClient, (client) => {
    let lastEventId = options.lastEventId
    let ended = false
    let transient = 0
    const url = `${client.config.baseUrl.replace(/\/+$/, "")}/v1/${kind}/tasks/${encodeURIComponent(id)}/events`
    const request = () =>
      HttpClientRequest.get(url).pipe(
        HttpClientRequest.setHeaders({
          accept: "text/event-stream",
          ...(client.config.resourceKey === undefined ? {} : { authorization: `Bearer ${client.config.resourceKey}` }),
          ...(lastEventId === undefined ? {} : { "last-event-id": lastEventId })
        })
      )
    const connection: Stream.Stream<TaskOf<K>, ClientError> = Stream.unwrap(
      Effect.map(client.http.execute(request()), (response) =>
        response.stream.pipe(
          Stream.mapError((e) => new NetworkError({ url, message: e.message })),
          Stream.decodeText(),
          Stream.splitLines,
          events,
          Stream.filter((e) => e.event === "task"),
          Stream.mapEffect((e) =>
            decoders[kind](e.data).pipe(
              Effect.mapError((parse) =>
                new GatewayError({
                  status: 0,
                  type: "api_error",
                  code: "unexpected_response",
                  message: `An event does not match the contract: ${parse.message}`,
                  request_id: null
                })
              ),
              Effect.map((task) => {
                lastEventId = e.id ?? lastEventId
                transient = 0
                if (task.status === "succeeded" || task.status === "failed") ended = true
                return task as TaskOf<K>
              })
            )
          )
        ))
    )
    const pause = (seconds: number) => Stream.drain(Stream.fromEffect(Effect.sleep(Duration.seconds(seconds))))
    const attempt = (): Stream.Stream<TaskOf<K>, ClientError> =>
      connection.pipe(
        Stream.catchAll((error) =>
          isTransient(error) && ++transient <= MAX_TRANSIENT
            ? pause((error._tag === "GatewayError" ? error.retry_after : undefined) ?? RECONNECT_S).pipe(
              Stream.concat(Stream.suspend(attempt))
            )
            : Stream.fail(error)
        ),
        // A stream that ended before the task did (a proxy's timeout, a replica's restart) is picked up again.
        Stream.concat(Stream.suspend(() =>
          ended ? Stream.empty : ++transient <= MAX_TRANSIENT
            ? pause(RECONNECT_S).pipe(Stream.concat(Stream.suspend(attempt)))
            : Stream.fail(new NetworkError({ url, message: "The event stream kept ending before the task did." }))
        ))
      )
    return Stream.suspend(attempt)
  }))

/**
 * `waitForTask` over the live status stream instead of polling: the task
 * when it succeeds, `TaskFailed` when it fails, `WaitTimeout` past
 * `timeout`; `onProgress` sees every state.
 */
export const watchUntilDone = <K extends TaskKind>(
  kind: K,
  id: string,
  options: Pick<WaitOptions<TaskOf<K>>, "onProgress" | "timeout"> = {}
) => {
  let last: TaskOf<K> | undefined
  const watched = watchTask(kind, id).pipe(
    Stream.tap((task) =>
      Effect.sync(() => {
        last = task
        options.onProgress?.(task)
      })
    ),
    Stream.runLast,
    Effect.flatMap((found) => {
      const task = Option.getOrUndefined(found)
      if (task?.status === "succeeded") return Effect.succeed(task)
      const error = task?.error ?? { code: "task_failed", message: "The task failed.", retryable: false }
      return Effect.fail(new TaskFailed({ task_id: id, kind, ...error }))
    })
  )
  if (options.timeout === undefined) return watched
  const seconds = Duration.toSeconds(Duration.decode(options.timeout))
  return watched.pipe(Effect.timeoutFail({
    duration: options.timeout,
    onTimeout: () =>
      new WaitTimeout({
        task_id: id,
        status: last?.status ?? "queued",
        progress: last?.progress ?? 0,
        seconds,
        message: `Task ${id} is still ${last?.status ?? "queued"} (${last?.progress ?? 0}%) after ${seconds} s.`
      })
  }))
}
