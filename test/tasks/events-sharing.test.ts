import { SqlClient } from "@effect/sql"
import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { StreamSlots } from "../../src/tasks/StreamSlots.ts"
import { TaskWait } from "../../src/tasks/TaskWait.ts"
import type { Observed } from "../../src/tasks/TaskWatchers.ts"
import { TaskWatchers } from "../../src/tasks/TaskWatchers.ts"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { raw } from "../support/http.ts"
import { METRICS_TOKEN, samplesOf, scrape, valueOf } from "../support/metrics.ts"
import { openEvents, type SseStream } from "../support/sse.ts"
import { videoRequest } from "../support/tasks.ts"

/**
 * Everyone following one task in a process shares one watcher of it
 * (tasks/TaskWatchers.ts): N streams, a long poll and a stream through the
 * full HttpApi path on the same task cause one read of its row per
 * notification or periodic tick, not one per follower, and every one of them
 * still gets every change and ends on the terminal state. The reads are
 * counted by the counter the watchers expose to /metrics
 * (`mtg_task_watch_reads_total`, by reason), the watchers and followers by
 * TaskWatchers' own figures. The API alone: the test moves the task with SQL,
 * which the table's trigger announces as any writer's change.
 */
let gw: TestGateway
const STREAMS = 25
beforeAll(async () => {
  const config = configWith("limits.json", (limits) => {
    limits.streams_per_key = STREAMS + 5
    for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.per_second = rate.burst = 100_000
  })
  gw = await startGateway({ CONFIG_DIR: config, METRICS_TOKEN })
})
afterAll(() => gw?.close())

const update = (id: string, set: string) =>
  gw.runtime.runPromise(
    Effect.flatMap(SqlClient.SqlClient, (sql) => sql.unsafe(`UPDATE tasks SET ${set} WHERE id = $1`, [id]))
  )

const FAILED = `status = 'failed', run_state = 'done', completed_at = 1700000000,
  error = '{"code":"generation_failed","message":"no","retryable":false}'::jsonb`

const stats = () =>
  gw.runtime.runPromise(
    Effect.map(Effect.all([TaskWatchers, StreamSlots]), ([watchers, slots]) => ({
      ...watchers.stats(),
      streams: slots.open()
    }))
  )

/** The watchers' reads so far, by reason, as /metrics exposes them. */
const reads = async () => {
  const samples = samplesOf((await scrape(gw, METRICS_TOKEN)).body)
  const of = (reason: string) => valueOf(samples, "mtg_task_watch_reads_total", { reason }) ?? 0
  return { opened: of("opened"), changed: of("changed"), periodic: of("periodic") }
}

const newTask = async () => {
  const acct = await createAccount(gw, { name: "watched", wallet_credits: 100 })
  const created = await api(gw, acct).createVideo(videoRequest())
  return { acct, id: created.id, path: `/v1/video/tasks/${created.id}/events` }
}

describe(`live status streams share one watcher per task (${backend})`, () => {
  it("N streams, a long poll and a full-path stream of one task: one read per change, every change to every one", async () => {
    const { acct, id, path } = await newTask()
    const before = await stats()
    expect(before.watchers).toBe(0)

    const streams: Array<SseStream> = await Promise.all(
      Array.from({ length: STREAMS }, () => openEvents(gw, path, acct.resource.key))
    )
    // A query string takes the request through the HttpApi stack instead of the fast route: it shares the watcher too.
    const fullPath = await openEvents(gw, `${path}?`, acct.resource.key)
    const all = [...streams, fullPath]
    for (const s of all) {
      expect(s.status).toBe(200)
      expect((await s.next())?.data).toMatchObject({ id, status: "queued" })
    }
    const longPoll = raw(gw, "GET", `/v1/video/tasks/${id}`, { key: acct.resource.key, headers: { prefer: "wait=60" } })
    await eventually(async () => {
      const now = await stats()
      return now.followers === all.length + 1 ? now : undefined
    }, "the long poll follows the task")
    const opened = await stats()
    expect(opened.watchers).toBe(1)
    expect(opened.streams).toBe(all.length)

    const reads0 = await reads()
    const passes0 = opened.periodicPasses
    const changes = [10, 35, 60, 85]
    for (const percent of changes) {
      await update(id, `status = 'in_progress', progress = ${percent}`)
      for (const s of all) expect((await s.next())?.data).toMatchObject({ status: "in_progress", progress: percent })
    }
    await update(id, FAILED)
    for (const s of all) {
      const rest = await s.rest()
      expect(rest.map((e) => e.data.status)).toEqual(["failed"])
    }
    const answered = await longPoll
    expect(answered.status).toBe(200)
    expect((answered.body as { status: string }).status).toBe("failed")

    const reads1 = await reads()
    const passes = (await stats()).periodicPasses - passes0
    const changed = reads1.changed - reads0.changed
    const periodic = reads1.periodic - reads0.periodic
    // One read per notification (changes + the terminal one; fewer if two came during one read), however
    // many follow the task; at most one per periodic pass; none for anyone opening meanwhile.
    expect(changed).toBeGreaterThanOrEqual(1)
    expect(changed).toBeLessThanOrEqual(changes.length + 1)
    expect(periodic).toBeLessThanOrEqual(passes)
    expect(reads1.opened - reads0.opened).toBe(0)
    // Each follower reading on its own would have made at least (followers × notifications) reads.
    expect(changed + periodic).toBeLessThan(all.length)

    // The task settled: every follower left, and the watcher with them.
    await eventually(async () => {
      const now = await stats()
      return now.watchers === 0 && now.followers === 0 && now.streams === 0 ? now : undefined
    }, "the watcher released once its followers left")
  })

  it("the watcher stays while one stream is left, and goes with the last", async () => {
    const { acct, id, path } = await newTask()
    const streams = await Promise.all(Array.from({ length: 5 }, () => openEvents(gw, path, acct.resource.key)))
    for (const s of streams) await s.next()
    for (const s of streams.slice(1)) s.close()
    await eventually(async () => {
      const now = await stats()
      return now.followers === 1 ? now : undefined
    }, "four streams gone")
    expect((await stats()).watchers).toBe(1)
    // The one left still sees changes.
    await update(id, "status = 'in_progress', progress = 42")
    expect((await streams[0]!.next())?.data).toMatchObject({ progress: 42 })
    streams[0]!.close()
    await eventually(async () => {
      const now = await stats()
      return now.watchers === 0 && now.followers === 0 && now.streams === 0 ? now : undefined
    }, "the last stream took the watcher with it")
  })

  it("a follower of another account shares the watcher but never sees the task", async () => {
    const { acct, id, path } = await newTask()
    const other = await createAccount(gw, { name: "other" })
    const stream = await openEvents(gw, path, acct.resource.key)
    expect((await stream.next())?.data.status).toBe("queued")
    // Another account's caller is refused before following anything (the 404 check per caller)...
    const refused = await openEvents(gw, path, other.resource.key)
    expect(refused.status).toBe(404)
    // ...and a follower that got past it would read no task from the shared watcher: the account is checked per follower.
    const seen: Array<Observed | undefined> = []
    const stop = await gw.runtime.runPromise(
      Effect.flatMap(TaskWait, (wait) => wait.follow(other.id, "video", id, (state) => seen.push(state)))
    )
    expect((await stats()).watchers).toBe(1)
    await update(id, "status = 'in_progress', progress = 5")
    expect((await stream.next())?.data).toMatchObject({ progress: 5 })
    await eventually(async () => (seen.length >= 2 ? seen : undefined), "the foreign follower's reads")
    expect(seen.every((state) => state === undefined)).toBe(true)
    stop()
    stream.close()
    await eventually(async () => ((await stats()).watchers === 0 ? true : undefined), "the watcher released")
  })
})
