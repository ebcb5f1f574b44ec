// Runs on PostgreSQL only: PGlite is embedded, with no connection to cut (vitest.config.ts).
import { afterEach, describe, expect, it } from "vitest"
import { GatewayError } from "../../src/client/Errors.ts"
import type { VideoTaskRequest } from "../../src/client/Tasks.ts"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { checkBooks } from "../support/books.ts"
import { alsoWith, configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { sleep } from "../support/eventually.ts"
import { type FaultProxy, startFaultProxy } from "../support/faultProxy.ts"
import { type Installation, installation, withDatabase } from "../support/installation.ts"
import { kill, type Service, stop } from "../support/process.ts"
import { untilStatuses } from "../support/taskRuns.ts"
import { videoRequest } from "../support/tasks.ts"

/**
 * PostgreSQL cut off for 10 s under load, the service as a real process:
 * the fault proxy between them resets every connection, then refuses new
 * ones, while 24 tasks run and creates keep coming. Every create is sent
 * with an Idempotency-Key and sent again until it is answered 202 (a
 * create cut off mid-way may have committed; the key makes the retry
 * return that task). Every task ends as asked, each charged once, the
 * balance equal to the ledger, one event per task.
 */

const GRANTED = { wallet: 1000, subscription: 0 }

let inst: Installation | undefined
let service: Service | undefined
let proxy: FaultProxy | undefined

afterEach(async (context) => {
  if (context.task.result?.state === "fail" && service !== undefined) {
    const notable = service.output().split("\n").filter((l) => !l.includes("\"message\":\"request\"")).slice(-60)
    console.error(notable.join("\n"))
  }
  if (service !== undefined) await kill(service)
  await proxy?.close()
  await inst?.close()
})

/** A create's answer: its status and what came with it (the task, or the error); undefined when none came. */
const answerOf = async (target: Installation["target"], token: string, key: string, body: VideoTaskRequest) => {
  try {
    const reply = await api(target, { model: token }).createVideoReply(body, { idempotencyKey: key })
    return { status: reply.status, id: reply.task.id, body: reply.task }
  } catch (error) {
    // An error answer has its status; a connection cut before a whole answer (or its body) is no answer.
    const answered = error instanceof GatewayError && error.status >= 300
    return answered ? { status: error.status, id: undefined, body: error } : undefined
  }
}

/** Creates a task under `key`, sending again (same Idempotency-Key) until it is answered 202; every answer met. */
const createSurely = async (target: Installation["target"], token: string, key: string, body: VideoTaskRequest) => {
  const answers: Array<number> = []
  for (;;) {
    const reply = await answerOf(target, token, key, body)
    answers.push(reply?.status ?? 0)
    if (reply?.status === 202 && reply.id !== undefined) return { id: reply.id, answers }
    // Anything but 202 while the database is away must be a server-side error, never a client's.
    if (reply !== undefined) expect(reply.status, JSON.stringify(reply.body)).toBeGreaterThanOrEqual(500)
    // A client's pause before sending again: the pacing is the scenario, not a wait for something.
    await sleep(250)
  }
}

describe(`PostgreSQL cut off, the service as a process (${backend})`, { timeout: 300_000 }, () => {
  it("every connection reset, then refused for 10 s, under 24 running tasks and steady creates: nothing lost, charged once", async () => {
    inst = await installation()
    const db = new URL(inst.db.url!)
    proxy = await startFaultProxy({ host: db.hostname, port: Number(db.port || 5432) })
    const proxied = new URL(inst.db.url!)
    proxied.hostname = "127.0.0.1"
    proxied.port = String(proxy.port)
    const config = alsoWith(
      configWith("models.json", (models) => {
        models.channels.sandbox = { ...models.channels.sandbox, concurrency: 40 }
      }),
      "limits.json",
      (limits) => {
        limits.engine = { poll_interval_ms: 200, heartbeat_s: 2, lease_s: 20, reaper_interval_s: 1, max_attempts: 5 }
        for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.burst = rate.per_second = 10_000
      }
    )
    service = await inst.serve("all", config, { env: { DATABASE_URL: proxied.toString() } })
    const acct = await createAccount(inst.target, { name: "db cut", wallet_credits: GRANTED.wallet })
    const body = (i: number) =>
      videoRequest({ input: { prompt: `cut ${i}` }, provider_options: { sandbox: { delay_ms: 6000 } } })

    const running = await Promise.all(
      Array.from({ length: 24 }, (_, i) => createSurely(inst!.target, acct.model.key, `run-${i}`, body(i)))
    )
    await untilStatuses(
      inst.target,
      acct.resource.key,
      running.map((r) => r.id),
      (s) => s.every((x) => x === "in_progress"),
      60_000
    )

    // Creates go on through the cut, one every 300 ms for 16 s.
    let stopCreating = false
    const steady: Array<Promise<{ id: string; answers: Array<number> }>> = []
    const creating = (async () => {
      for (let i = 0; !stopCreating; i++) {
        steady.push(createSurely(inst!.target, acct.model.key, `steady-${i}`, body(100 + i)))
        await sleep(300)
      }
    })()
    // The sleeps below are the scenario's timeline: creates before the cut, the 10 s outage, creates after it.
    await sleep(2_000)
    proxy.cut()
    await proxy.set("refuse")
    await sleep(10_000)
    await proxy.set("pass")
    await sleep(4_000)
    stopCreating = true
    await creating
    const created = await Promise.all(steady)
    // The cut was felt: some creates were answered with an error (or not at all) before their 202.
    expect(created.some((c) => c.answers.length > 1)).toBe(true)

    const ids = [...running, ...created].map((c) => c.id)
    expect(new Set(ids).size).toBe(ids.length)
    await untilStatuses(inst.target, acct.resource.key, ids, (s) => s.every((x) => x === "succeeded"), 180_000)
    await stop(service)
    await withDatabase(
      { dbUrl: inst.db.url, dataDir: inst.dataDir },
      (rows) => checkBooks(rows, acct.id, GRANTED, new Map(ids.map((id) => [id, "succeeded" as const])))
    )
  })
})
