import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { reapOnce } from "../../src/tasks/engine/Reaper.ts"
import type { ScriptedRecord } from "../fixtures/channels/scripted/index.ts"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { alsoWith, configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { fixtureRef } from "../support/fixtures.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { probeBytes } from "../support/media.ts"
import { lastSeen, ledgerOf, pollTask, query, resultOf, taskErrorOf, videoRequest } from "../support/tasks.ts"

/**
 * The engine against an asynchronous upstream (test/fixtures/channels/scripted):
 * submit, wait with no lease, batched polls with backoff and retry hints,
 * ambiguous submits reconciled by `find` (or refunded without it), unknown
 * statuses until the deadline, "done but no output".
 */

const WITH_FIND = "provy-famS-2.0-480p"
const NO_FIND = "provy-famS-2.0-720p"
const SHORT = "provy-famS-2.0-fast-480p"

let gw: TestGateway
let env: Record<string, string>
const rec = () => (globalThis as { scripted?: ScriptedRecord }).scripted!

beforeAll(async () => {
  const adapter = fixtureRef("channels/scripted")
  const config = configWith("models.json", (models) => {
    models.channels.scripted = { adapter, with_find: true, concurrency: 5 }
    models.channels["scripted-nofind"] = { adapter, with_find: false }
    models.channels["scripted-short"] = { adapter, with_find: true, timeouts: { deadline_s: 2 } }
    models.models[WITH_FIND].channels = ["scripted"]
    models.models[NO_FIND].channels = ["scripted-nofind"]
    models.models[SHORT].channels = ["scripted-short"]
  })
  alsoWith(config, "limits.json", (limits) => {
    limits.engine = { poll_interval_ms: 200, heartbeat_s: 1, lease_s: 10, retry_base_ms: 50, generate_retries: 2 }
    for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.burst = rate.per_second = 10_000
  })
  env = { ROLE: "all", CONFIG_DIR: config }
  gw = await startGateway(env)
}, 60_000)
afterAll(async () => {
  await gw?.close()
})

const run = async (model: string, prompt: string) => {
  const acct = await createAccount(gw, { name: prompt, wallet_credits: 100 })
  const created = await api(gw, acct).createVideoReply(videoRequest({ model, input: { prompt } }))
  expect(created.status).toBe(202)
  const seen = await pollTask(gw, acct.resource.key, created.task.id)
  return { task: lastSeen(seen), seen }
}

const expectRefunded = async (taskId: string) =>
  expect((await ledgerOf(gw, taskId)).map((l) => l.kind)).toEqual(["charge", "refund"])

describe(`the engine on an asynchronous upstream (${backend})`, () => {
  it("submits once, waits without a lease, reports progress, re-hosts the result", async () => {
    const { task, seen } = await run(WITH_FIND, "a fox")
    expect(task.status).toBe("succeeded")
    expect(seen.some((t) => t.status === "in_progress" && t.progress > 0 && t.progress < 100)).toBe(true)
    expect(rec().submits.get(task.id)).toBe(1)
    const bytes = new Uint8Array(await (await fetch(resultOf(task).videos[0].url)).arrayBuffer())
    expect((await probeBytes(bytes)).video?.codec).toBe("h264")
    expect(JSON.stringify(task)).not.toContain("up_")
  })

  it("an ambiguous submit is reconciled through find: adopted, never created twice", async () => {
    const { task } = await run(WITH_FIND, "ambiguous")
    expect(task.status).toBe("succeeded")
    const created = [...rec().upstream.values()].filter((t) => t.taskId === task.id)
    expect(created).toHaveLength(1)
    expect(rec().submits.get(task.id)).toBe(1)
  })

  it("an ambiguous submit without find fails at once, retryable, refunded; never sent again", async () => {
    const { task } = await run(NO_FIND, "ambiguous")
    expect(task.status).toBe("failed")
    expect(taskErrorOf(task).retryable).toBe(true)
    expect(rec().submits.get(task.id)).toBe(1)
    await expectRefunded(task.id)
  })

  it("unknown statuses keep polling until the deadline, then fail with the refund", async () => {
    const { task } = await run(SHORT, "unknown")
    expect(task.status).toBe("failed")
    const polled = rec().polls.filter((p) => rec().upstream.get(p.id)?.taskId === task.id)
    expect(polled.length).toBeGreaterThan(1)
    await expectRefunded(task.id)
    const view = await operator(gw).task(task.id)
    expect(view.attempts[0]).toMatchObject({ channel: "scripted-short", outcome: "deadline" })
    expect(view.attempts[0]!.last_answer).toMatchObject({ status: "mystery" })
  })

  it("done with no output, or failed upstream, fails with the refund", async () => {
    for (const prompt of ["empty", "fail"]) {
      const { task } = await run(WITH_FIND, prompt)
      expect(task.status).toBe("failed")
      await expectRefunded(task.id)
    }
  })

  // The backoff itself is proven on the test clock (retry-schedules.test.ts); this is the poller obeying it end to end.
  it("a 429 on poll is honoured: the next poll waits as long as asked", async () => {
    const { task } = await run(WITH_FIND, "throttled")
    expect(task.status).toBe("succeeded")
    const times = rec().polls.filter((p) => rec().upstream.get(p.id)?.taskId === task.id).map((p) => p.at)
    expect(times[1]! - times[0]!).toBeGreaterThanOrEqual(1400)
  })

  it("a process stopped mid-submit: the next attempt finds the upstream task instead of submitting again", async () => {
    const acct = await createAccount(gw, { name: "hang", wallet_credits: 100 })
    const { id } = await api(gw, acct).createVideo(videoRequest({ model: WITH_FIND, input: { prompt: "hang" } }))
    await eventually(async () => rec().submits.get(id) === 1 || undefined, "the submit reached the upstream")
    await gw.stop()
    gw = await startGateway(env, undefined, {}, backend, gw)
    const task = lastSeen(await pollTask(gw, acct.resource.key, id))
    expect(task.status).toBe("succeeded")
    expect(rec().submits.get(id)).toBe(1)
    expect([...rec().upstream.values()].filter((t) => t.taskId === id)).toHaveLength(1)
    const view = await operator(gw).task(id)
    expect(view.attempts.map((a) => a.outcome)).toEqual(["submitting", "succeeded"])
  }, 120_000)

  it("the reaper leaves waiting tasks alone", async () => {
    const acct = await createAccount(gw, { name: "reaper", wallet_credits: 100 })
    const created = await api(gw, acct).createVideo(videoRequest({ model: SHORT, input: { prompt: "unknown" } }))
    await pollTask(gw, acct.resource.key, created.id, () => true)
    await eventually(async () => {
      const [row] = await query<{ run_state: string }>(
        gw,
        (sql) => sql`SELECT run_state FROM tasks WHERE id = ${created.id}`
      )
      return row!.run_state === "waiting" || undefined
    }, "the task waits upstream")
    // Even with a lease end long past (a waiting task has none), a sweep does not requeue it.
    await query(gw, (sql) => sql`UPDATE tasks SET lease_expires_at = 0 WHERE id = ${created.id} RETURNING id`)
    await gw.runtime.runPromise(reapOnce)
    const [row] = await query<{ run_state: string; status: string; attempt: number }>(
      gw,
      (sql) => sql`SELECT run_state, status, attempt FROM tasks WHERE id = ${created.id}`
    )
    expect(row).toMatchObject({ run_state: "waiting", status: "in_progress", attempt: 1 })
  })
})
