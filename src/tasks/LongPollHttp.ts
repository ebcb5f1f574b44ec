import { HttpServerRequest, HttpServerResponse } from "@effect/platform"
import { Effect } from "effect"
import { CurrentPrincipal } from "../accounts/Security.ts"
import type { ImageTask, TaskKind, VideoTask } from "./Task.ts"
import { TaskWait } from "./TaskWait.ts"

/** The longest a long poll waits, whatever it asks for. */
export const MAX_WAIT_S = 60

/**
 * The `wait` preference of a `Prefer` header (RFC 7240): seconds 1 to 60, a
 * larger number counting as 60. Absent, zero or malformed: undefined, and
 * the request is answered as if it had not asked (preferences are hints).
 */
export const preferredWait = (header: string | undefined): number | undefined => {
  if (header === undefined) return undefined
  for (const preference of header.split(",")) {
    const found = /^\s*wait\s*=\s*"?(\d+)"?\s*(;.*)?$/i.exec(preference)
    if (found === null) continue
    const seconds = Number(found[1])
    return seconds >= 1 ? Math.min(seconds, MAX_WAIT_S) : undefined
  }
  return undefined
}

/**
 * The long poll of a task query: with `Prefer: wait=N` the answer waits until
 * the task is terminal or N seconds have passed (TaskWait, the machinery of
 * the live status stream), then answers the task as it is then, with
 * `Preference-Applied`. A terminal task is answered at once. Without the
 * preference the task is answered as read.
 */
export const longPoll = <T extends VideoTask | ImageTask>(kind: TaskKind) => (task: T) =>
  Effect.gen(function*() {
    const request = yield* HttpServerRequest.HttpServerRequest
    const seconds = preferredWait(request.headers["prefer"])
    if (seconds === undefined) return task
    const principal = yield* CurrentPrincipal
    const settled = yield* (yield* TaskWait).awaitSettled(principal.accountId, kind, task, seconds)
    return HttpServerResponse.unsafeJson(settled, {
      headers: { "preference-applied": `wait=${seconds}`, vary: "Prefer" }
    })
  })
