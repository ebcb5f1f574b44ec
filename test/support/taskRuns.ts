import { NetworkError } from "../../src/client/Errors.ts"
import type { VideoTaskRequest } from "../../src/client/Tasks.ts"
import { api } from "./api.ts"
import { eventually } from "./eventually.ts"
import type { Target } from "./wire.ts"

/**
 * Tasks driven over HTTP by process-level tests: created, then polled until
 * their statuses satisfy a condition, with a deadline (never a speed measurement).
 */

// The typed client sends a request met by a reset once more (`fetchRetryingReset`); a reset met twice
// reaches here as its `NetworkError` (whose message no longer names the code).
const isReset = (e: unknown) =>
  e instanceof NetworkError ||
  (e instanceof TypeError && String((e as { cause?: { code?: string } }).cause?.code) === "ECONNRESET")

/** Creates a video task through the typed client (rejecting unless it answers 202); its id. */
export const createVideoTask = async (target: Target, key: string, body: VideoTaskRequest) =>
  (await api(target, { model: key }).createVideo(body)).id

/** The tasks as the task endpoint answers them (decoded by the typed client), in order. */
export const videoTaskStates = (target: Target, key: string, ids: ReadonlyArray<string>) =>
  Promise.all(ids.map((id) => api(target, { resource: key }).getVideo(id)))

export const count = (values: ReadonlyArray<string>) =>
  values.reduce<Record<string, number>>((acc, v) => ({ ...acc, [v]: (acc[v] ?? 0) + 1 }), {})

export const terminal = (s: string) => s === "succeeded" || s === "failed"

/** Polls the tasks until `done` holds for their statuses; the statuses then. */
export const untilStatuses = async (
  target: Target,
  key: string,
  ids: ReadonlyArray<string>,
  done: (statuses: Array<string>) => boolean,
  deadlineMs: number
) => {
  let last: Array<string> = []
  let failedCodes: Array<string> = []
  // Any other failure of a poll ends the wait at once.
  let failure: { readonly error: unknown } | undefined
  await eventually(
    async () => {
      // A poll racing a kept-alive socket the server just closed (ECONNRESET) is a poll to repeat, not a verdict.
      const polled = await videoTaskStates(target, key, ids).then(
        (tasks) => {
          failedCodes = tasks.flatMap((t) =>
            t.status === "failed" ? [`${t.id}: ${t.error?.code} ${t.error?.message}`] : []
          )
          return tasks.map((t): string => t.status)
        },
        (error: unknown) => {
          if (!isReset(error)) failure = { error }
          return undefined
        }
      )
      if (polled !== undefined) last = polled
      return failure !== undefined || (polled !== undefined && done(last))
    },
    "the tasks reach the awaited state",
    { deadlineMs, intervalMs: 200 }
  ).catch(() => {
    // The failed tasks' errors say which step gave up, which the counts alone do not.
    const failed = failedCodes.length > 0 ? `; failed: ${failedCodes.slice(0, 10).join("; ")}` : ""
    throw new Error(`tasks never reached the awaited state: ${JSON.stringify(count(last))}${failed}`)
  })
  if (failure !== undefined) throw failure.error
  return last
}
