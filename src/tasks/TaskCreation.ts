import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { formatTraceparent } from "../platform/TraceContext.ts"
import { InvalidTaskRequest } from "./Errors.ts"
import type { ImageTask, TaskKind, VideoTask } from "./Task.ts"

/** What every task create shares: the Idempotency-Key, the stored trace context and the 202 answer. */

const MAX_IDEMPOTENCY_KEY = 128

export const idempotencyKey = Effect.flatMap(HttpServerRequest.HttpServerRequest, (request) => {
  const key = request.headers["idempotency-key"]
  if (key === undefined) return Effect.succeed(null)
  if (key.length === 0 || key.length > MAX_IDEMPOTENCY_KEY) {
    return Effect.fail(
      new InvalidTaskRequest({
        code: "invalid_request",
        message: `Idempotency-Key must be 1 to ${MAX_IDEMPOTENCY_KEY} characters.`
      })
    )
  }
  return Effect.succeed(key)
})

/** 202 with `Location` and `Retry-After`; a replay also says `Idempotent-Replayed: true`. */
export const accepted = (kind: TaskKind, task: VideoTask | ImageTask, replayed: boolean, pollSeconds: number) =>
  HttpServerResponse.unsafeJson(task, {
    status: 202,
    headers: {
      location: `/v1/${kind}/tasks/${task.id}`,
      "retry-after": String(pollSeconds),
      ...(replayed ? { "idempotent-replayed": "true" } : {})
    }
  })

/** The create request's trace context, stored with the task so the engine continues its trace. */
export const currentTraceparent = Effect.currentSpan.pipe(
  Effect.map(formatTraceparent),
  Effect.orElseSucceed(() => null)
)
