import { Effect, Either } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Claim } from "../../src/tasks/engine/Claim.ts"
import { reapOnce } from "../../src/tasks/engine/Reaper.ts"
import { STORE_HOLD_MS } from "../../src/tasks/engine/StoreRetrier.ts"
import { TaskOutcomes } from "../../src/tasks/engine/TaskOutcomes.ts"
import { TaskQueue } from "../../src/tasks/engine/TaskQueue.ts"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { after } from "../support/clock.ts"
import { configWith } from "../support/config.ts"
import { backends } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { eventsOf, ledgerOf, query, videoRequest } from "../support/tasks.ts"

/**
 * The queue's guarantees, driven step by step: this gateway runs no engine
 * (ROLE=api), so the test itself plays the workers through the TaskQueue and
 * TaskOutcomes services. Leases run out on Effect's TestClock, not the wall
 * clock: the reaper is run as if the lease had passed.
 */
const LEASE_S = 60

let gw: TestGateway
const config = configWith("limits.json", (limits) => {
  limits.engine = { lease_s: LEASE_S, heartbeat_s: 20, max_attempts: 2 }
  for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.burst = rate.per_second = 10_000
})

const run = <A, E>(effect: Effect.Effect<A, E, TaskQueue | TaskOutcomes>) =>
  gw.runtime.runPromise(effect as Effect.Effect<A, E, never>)
const claim = (worker: string, limit = 1, concurrency = 1000) =>
  run(Effect.flatMap(TaskQueue, (q) => q.claim("sandbox", worker, limit, { concurrency: concurrency })))
/** The reaper as it runs once every lease taken so far has run out. */
const afterLeases = after((LEASE_S + 1) * 1000)
const reap = () => run(afterLeases(Effect.flatMap(TaskQueue, (q) => q.reapExpired)))
const statusOf = async (id: string) =>
  (await query<{ status: string; attempt: number; progress: number }>(
    gw,
    (sql) => sql`SELECT status, attempt, progress FROM tasks WHERE id = ${id}`
  ))[0]!

const newTasks = async (n: number) => {
  const acct = await createAccount(gw, { name: "claims", wallet_credits: 1000 })
  const ids: Array<string> = []
  for (let i = 0; i < n; i++) {
    const task = await api(gw, acct).createVideo(videoRequest())
    ids.push(task.id)
  }
  return { acct, ids }
}

const finish = (claims: ReadonlyArray<Claim>) =>
  run(Effect.forEach(claims, (c) => Effect.flatMap(TaskOutcomes, (o) => o.succeed(c, [], { videos: [] }))))

/** Leaves no queued task behind, so each test claims only its own. */
const drain = async () => {
  for (let batch = await claim("drain", 100); batch.length > 0; batch = await claim("drain", 100)) await finish(batch)
}

// The same guarantees on each database this run reaches, one gateway at a time.
describe.each(backends)("queue claims (%s)", (on) => {
  beforeAll(async () => {
    gw = await startGateway({ CONFIG_DIR: config }, undefined, {}, on)
  })
  afterAll(() => gw?.close())

  it("concurrent claims never hand one task to two workers", async () => {
    await drain()
    const { ids } = await newTasks(20)
    const batches = await Promise.all(Array.from({ length: 8 }, (_, i) => claim(`w${i}`, 3)))
    const claimed = batches.flat().map((c) => c.id)
    expect(new Set(claimed).size).toBe(claimed.length)
    expect(claimed.length).toBe(20)
    expect(new Set(claimed)).toEqual(new Set(ids))
    for (const id of ids) expect((await statusOf(id)).status).toBe("in_progress")
    await finish(batches.flat())
  })

  it("concurrent claims never take a channel past its concurrency, tasks waiting upstream included", async () => {
    await drain()
    await newTasks(10)
    // Eight workers (as on eight replicas) claim at once with room for 4 in flight on the channel.
    const first = (await Promise.all(Array.from({ length: 8 }, (_, i) => claim(`c${i}`, 3, 4)))).flat()
    expect(first.length).toBe(4)
    // Two of them are submitted upstream: they hold no lease but still count against the channel.
    const [w1, w2, r1, r2] = first
    for (const waiting of [w1!, w2!]) {
      const submitted = { id: `up-${waiting.id}`, model: "m", runAt: Date.now() + 60_000 }
      expect(await run(Effect.flatMap(TaskQueue, (q) => q.wait(waiting, submitted)))).toBe(true)
    }
    expect(await claim("more", 10, 4)).toEqual([])
    // Two leave the channel (one succeeded, one waiting upstream ended): exactly two slots open.
    await finish([r1!, w1!])
    const second = await claim("more", 10, 4)
    expect(second.length).toBe(2)
    expect(await claim("more", 10, 4)).toEqual([])
    await finish([r2!, w2!, ...second])
    await drain()
  })

  it("a stale worker whose lease was taken over can write nothing; one terminal state, no refund", async () => {
    await drain()
    const { ids: [id] } = await newTasks(1)
    const [stale] = await claim("worker-a")
    expect(stale!.id).toBe(id)
    expect(stale!.attempt).toBe(1)

    const reaped = await reap()
    expect(reaped.requeued.map((r) => r.id)).toEqual([id])
    expect((await statusOf(id!)).status).toBe("queued")

    const [fresh] = await claim("worker-b")
    expect(fresh).toMatchObject({ id, attempt: 2 })
    await run(Effect.flatMap(TaskQueue, (q) => q.progress(fresh!, 40)))

    // Worker A wakes up and tries everything it would do.
    const heartbeat = await run(Effect.flatMap(TaskQueue, (q) => q.heartbeat(stale!)))
    expect(heartbeat).toBe(false)
    await run(Effect.flatMap(TaskQueue, (q) => q.progress(stale!, 90)))
    expect((await statusOf(id!)).progress).toBe(40)
    const staleSucceed = await run(
      Effect.either(Effect.flatMap(TaskOutcomes, (o) => o.succeed(stale!, [], { videos: [] })))
    )
    expect(Either.isLeft(staleSucceed) && staleSucceed.left._tag).toBe("StaleClaim")
    const staleFail = await run(
      Effect.either(
        Effect.flatMap(
          TaskOutcomes,
          (o) => o.fail(stale!, { code: "video_task_failed", message: "stale", retryable: true })
        )
      )
    )
    expect(Either.isLeft(staleFail) && staleFail.left._tag).toBe("StaleClaim")

    await run(Effect.flatMap(TaskOutcomes, (o) => o.succeed(fresh!, [], { videos: [] })))
    expect(await statusOf(id!)).toMatchObject({ status: "succeeded", attempt: 2, progress: 100 })
    expect((await ledgerOf(gw, id!)).map((l) => l.kind)).toEqual(["charge"])
    expect((await eventsOf(gw, id!)).map((e) => e.type)).toEqual(["video.task.succeeded"])
  })

  it("a task that exhausts its attempts fails once with one refund, however often the reaper runs", async () => {
    await drain()
    const { acct, ids: [id] } = await newTasks(1)
    const first = await claim("crashing-1")
    expect(first[0]!.attempt).toBe(1)
    await reap()
    const second = await claim("crashing-2")
    expect(second[0]!.attempt).toBe(2)

    // The engine's own reaper sweep, three at once as on three replicas.
    await Promise.all([reapOnce, reapOnce, reapOnce].map((sweep) => run(afterLeases(sweep))))
    expect((await statusOf(id!)).status).toBe("failed")
    const failed = await api(gw, acct).getVideo(id!)
    expect(failed.error).toEqual({ code: "video_task_failed", message: expect.any(String), retryable: true })
    const ledger = await ledgerOf(gw, id!)
    expect(ledger.map((l) => l.kind)).toEqual(["charge", "refund"])
    expect(ledger[0]!.wallet_micros + ledger[1]!.wallet_micros).toBe(0)
    expect((await eventsOf(gw, id!)).map((e) => e.type)).toEqual(["video.task.failed"])
  })

  it("an image task whose attempts are spent fails with the image code 524, retryable, refunded", async () => {
    await drain()
    const acct = await createAccount(gw, { name: "image-claims", wallet_credits: 10 })
    const created = await api(gw, acct).createImageReply({
      model: "provx-image-1",
      operation: "generation",
      input: { prompt: "a kite" }
    })
    expect(created.status).toBe(202)
    const id = created.task.id
    for (const worker of ["crashing-1", "crashing-2"]) {
      expect((await claim(worker)).map((c) => c.id)).toEqual([id])
      await run(afterLeases(reapOnce))
    }
    const failed = await api(gw, acct).getImage(id)
    expect(failed).toMatchObject({ status: "failed", error: { code: "524", retryable: true } })
    expect((await ledgerOf(gw, id)).map((l) => l.kind)).toEqual(["charge", "refund"])
    const [event] = await eventsOf(gw, id)
    expect(event).toMatchObject({ type: "image.task.failed" })
  })

  it("releasing a claim puts the task back in the queue as it was", async () => {
    await drain()
    const { ids: [id] } = await newTasks(1)
    const [held] = await claim("stopping")
    await run(Effect.flatMap(TaskQueue, (q) => q.progress(held!, 30)))
    await run(Effect.flatMap(TaskQueue, (q) => q.release(held!)))
    const row = await query<{ status: string; progress: number; started_at: number | null }>(
      gw,
      (sql) => sql`SELECT status, progress, started_at FROM tasks WHERE id = ${id}`
    )
    expect(row[0]).toEqual({ status: "queued", progress: 0, started_at: null })
  })

  it("a storing task held by a pass whose process died is due again after one hold; a renewal keeps it, never undoing a try's reschedule", async () => {
    await drain()
    const { ids: [id] } = await newTasks(1)
    const [running] = await claim("storing")
    const spool = { id: "spool-claims", record: { outputs: [] }, runAt: Date.now() - 1 }
    expect(await run(Effect.flatMap(TaskQueue, (q) => q.waitForStorage(running!, spool)))).toBe(true)
    const claimStored = (ms: number) =>
      run(after(ms)(Effect.flatMap(TaskQueue, (q) => q.claimStored(spool.id, 10, STORE_HOLD_MS))))
    const runAt = async () =>
      Number((await query<{ run_at: number }>(gw, (sql) => sql`SELECT run_at FROM tasks WHERE id = ${id}`))[0]!.run_at)

    const first = await claimStored(0)
    expect(first.rows.map((r) => r.id)).toEqual([id])
    expect(await runAt()).toBe(first.heldUntil)
    // Held: no other pass takes it meanwhile.
    expect((await claimStored(STORE_HOLD_MS / 2)).rows).toEqual([])
    // Its pass died (no renewal): due again once the hold is over, not after a long hold.
    const second = await claimStored(STORE_HOLD_MS + 1000)
    expect(second.rows.map((r) => r.id)).toEqual([id])

    // A renewal moves a hold still at its last end, once.
    const holdStored = (held: number, until: number) =>
      run(Effect.flatMap(TaskQueue, (q) => q.holdStored([id], held, until)))
    const renewed = second.heldUntil + STORE_HOLD_MS
    expect(await holdStored(second.heldUntil, renewed)).toBe(1)
    expect(await holdStored(second.heldUntil, renewed + 5)).toBe(0)
    expect(await runAt()).toBe(renewed)
    // The try rescheduled the task: a renewal racing it leaves the try's time.
    const retryAt = renewed + 12_345
    await run(Effect.flatMap(TaskQueue, (q) => q.retryStoreAt(running!, retryAt)))
    expect(await holdStored(renewed, renewed + STORE_HOLD_MS)).toBe(0)
    expect(await runAt()).toBe(retryAt)
    await run(Effect.flatMap(TaskOutcomes, (o) => o.succeed(running!, [], { videos: [] })))
  })
})
