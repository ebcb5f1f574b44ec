import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { StreamSlots } from "../../src/tasks/StreamSlots.ts"
import { TaskWatchers } from "../../src/tasks/TaskWatchers.ts"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { expectError } from "../support/http.ts"
import { openEvents } from "../support/sse.ts"
import { videoRequest } from "../support/tasks.ts"

/** The API alone (no engine): the tests move tasks with SQL, which the table's trigger announces as any writer's change. */
let gw: TestGateway
const BOUND = 200
beforeAll(async () => {
  const config = configWith("limits.json", (limits) => {
    limits.streams_per_key = BOUND
    for (const rate of Object.values(limits.rate_limits) as Array<any>) {
      rate.per_second = 100_000
      rate.burst = 100_000
    }
  })
  gw = await startGateway({ CONFIG_DIR: config })
})
afterAll(() => gw?.close())

const update = (set: (sql: SqlClient.SqlClient) => Effect.Effect<unknown, unknown>) =>
  gw.runtime.runPromise(Effect.flatMap(SqlClient.SqlClient, set))

const progress = (id: string, percent: number) =>
  update((sql) => sql`UPDATE tasks SET status = 'in_progress', progress = ${percent} WHERE id = ${id}`)

const fail = (id: string) =>
  update(
    (sql) =>
      sql`UPDATE tasks SET status = 'failed', run_state = 'done', completed_at = 1700000000,
        error = ${JSON.stringify({ code: "generation_failed", message: "no", retryable: false })}::jsonb
        WHERE id = ${id}`
  )

const newTask = async () => {
  const acct = await createAccount(gw, { name: "watcher", wallet_credits: 100 })
  const created = await api(gw, acct).createVideoReply(videoRequest())
  expect(created.status).toBe(202)
  return { acct, id: created.task.id, path: `/v1/video/tasks/${created.task.id}/events` }
}

const current = (key: string, id: string) => api(gw, { resource: key }).getVideo(id)

/** Nothing is left registered once every stream is gone. */
const leftBehind = () =>
  gw.runtime.runPromise(
    Effect.map(
      Effect.all([TaskWatchers, StreamSlots]),
      ([watchers, slots]) => ({ ...watchers.stats(), streams: slots.open() })
    )
  )

describe(`live status stream (${backend})`, () => {
  it("sends the task, each change of status or progress with growing ids, the terminal state, then ends", async () => {
    const { acct, id, path } = await newTask()
    const stream = await openEvents(gw, path, acct.resource.key)
    expect(stream.status).toBe(200)
    expect(stream.headers.get("content-type")).toMatch(/^text\/event-stream/)
    const first = await stream.next()
    expect(first?.event).toBe("task")
    expect(first?.data).toEqual(await current(acct.resource.key, id))
    await progress(id, 10)
    const second = await stream.next()
    expect(second?.data).toMatchObject({ status: "in_progress", progress: 10 })
    await progress(id, 55)
    const third = await stream.next()
    expect(third?.data).toMatchObject({ status: "in_progress", progress: 55 })
    await fail(id)
    const rest = await stream.rest()
    expect(rest.at(-1)?.data).toEqual(await current(acct.resource.key, id))
    expect(rest.at(-1)?.data.status).toBe("failed")
    const ids = [first, second, third, ...rest].map((e) => Number(e!.id))
    expect(ids.every((n, i) => i === 0 || n > ids[i - 1]!)).toBe(true)
  })

  it("a terminal task: one event, then the stream ends", async () => {
    const { acct, id, path } = await newTask()
    await fail(id)
    const stream = await openEvents(gw, path, acct.resource.key)
    const all = await stream.rest()
    expect(all).toHaveLength(1)
    expect(all[0]!.data).toEqual(await current(acct.resource.key, id))
  })

  it("Last-Event-ID of the current state resumes after it; a bogus one counts as none", async () => {
    const { acct, id, path } = await newTask()
    await progress(id, 20)
    const first = await (await openEvents(gw, path, acct.resource.key)).next()
    const resumed = await openEvents(gw, path, acct.resource.key, { "last-event-id": first!.id! })
    for (const bogus of ["not-a-number", "99999999", "-1", "1.5", ""]) {
      const stream = await openEvents(gw, path, acct.resource.key, { "last-event-id": bogus })
      const sent = await stream.next()
      expect(sent?.id).toBe(first!.id)
      expect(sent?.data).toMatchObject({ status: "in_progress", progress: 20 })
      stream.close()
    }
    await progress(id, 30)
    const next = await resumed.next()
    expect(next?.data).toMatchObject({ progress: 30 })
    expect(Number(next!.id)).toBeGreaterThan(Number(first!.id))
    resumed.close()
  })

  it("unknown task, another account's, or a model token: the JSON error body", async () => {
    const { acct, path } = await newTask()
    const other = await createAccount(gw, { name: "other" })
    const foreign = await openEvents(gw, path, other.resource.key)
    expectError({ status: foreign.status, headers: foreign.headers, body: foreign.body }, 404, "task_not_found")
    const unknown = await openEvents(gw, "/v1/video/tasks/task_nope/events", acct.resource.key)
    expectError({ status: unknown.status, headers: unknown.headers, body: unknown.body }, 404, "task_not_found")
    const wrongKind = await openEvents(gw, path.replace("/video/", "/image/"), acct.resource.key)
    expectError({ status: wrongKind.status, headers: wrongKind.headers, body: wrongKind.body }, 404, "task_not_found")
    const modelKey = await openEvents(gw, path, acct.model.key)
    expect(modelKey.status).toBe(403)
  })

  it(`${BOUND} streams of one key, the next refused with 429; dropped, they leave no watcher or slot behind`, async () => {
    const { acct, id, path } = await newTask()
    const before = await leftBehind()
    const streams = await Promise.all(Array.from({ length: BOUND }, () => openEvents(gw, path, acct.resource.key)))
    await Promise.all(streams.map((s) => s.next()))
    expect(streams.every((s) => s.status === 200)).toBe(true)
    const refused = await openEvents(gw, path, acct.resource.key)
    expectError({ status: refused.status, headers: refused.headers, body: refused.body }, 429, "rate_limit_exceeded")
    // Another key of the same account has a bound of its own.
    const opened = await leftBehind()
    // One watcher of the task, whatever the number of streams following it.
    expect(opened.followers - before.followers).toBe(BOUND)
    expect(opened.watchers - before.watchers).toBe(1)
    expect(opened.streams - before.streams).toBe(BOUND)
    for (const s of streams) s.close()
    await eventually(async () => {
      const now = await leftBehind()
      return now.watchers === before.watchers && now.followers === before.followers && now.streams === before.streams
        ? now
        : undefined
    }, "every watcher and slot released")
    // The key's slots are back: a new stream opens and still sees changes.
    const again = await openEvents(gw, path, acct.resource.key)
    expect(again.status).toBe(200)
    await again.next()
    await progress(id, 70)
    expect((await again.next())?.data).toMatchObject({ progress: 70 })
    again.close()
  })
})
