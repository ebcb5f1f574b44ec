import { eventually } from "./eventually.ts"
import { call, type Target } from "./http.ts"

/**
 * Tasks driven over HTTP by process-level tests: created, then polled until
 * their statuses satisfy a condition, with a deadline (never a speed measurement).
 */

const isReset = (e: unknown) =>
  e instanceof TypeError && String((e as { cause?: { code?: string } }).cause?.code) === "ECONNRESET"

/** Creates a video task; its id. */
export const createVideoTask = async (target: Target, key: string, body: unknown) => {
  const reply = await call(target, "POST", "/v1/video/tasks", { key, json: body })
  if (reply.status !== 202) throw new Error(`create: ${reply.status} ${JSON.stringify(reply.body)}`)
  return reply.body.id as string
}

/** The tasks as the query endpoint answers them, in order. */
export const videoTasks = (target: Target, key: string, ids: ReadonlyArray<string>) =>
  Promise.all(ids.map(async (id) => {
    const reply = await call(target, "GET", `/v1/video/tasks/${id}`, { key })
    if (reply.status !== 200) throw new Error(`GET ${id}: ${reply.status} ${JSON.stringify(reply.body)}`)
    return reply.body
  }))

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
  // Any other failure of a poll ends the wait at once.
  let failure: { readonly error: unknown } | undefined
  await eventually(
    async () => {
      // A poll racing a kept-alive socket the server just closed (ECONNRESET) is a poll to repeat, not a verdict.
      const polled = await videoTasks(target, key, ids).then(
        (tasks) => tasks.map((t) => t.status as string),
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
    throw new Error(`tasks never reached the awaited state: ${JSON.stringify(count(last))}`)
  })
  if (failure !== undefined) throw failure.error
  return last
}
