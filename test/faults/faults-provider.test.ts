import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { type FakeArk, startFakeArk } from "../fakes/ark.ts"
import { createAccount, operator } from "../support/adminApi.ts"
import { checkBooks } from "../support/books.ts"
import { alsoWith, configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually, sleep } from "../support/eventually.ts"
import { type FaultProxy, startFaultProxy } from "../support/faultProxy.ts"
import { type Installation, installation, withDatabase } from "../support/installation.ts"
import { kill, type Service, stop } from "../support/process.ts"
import { createVideoTask, untilStatuses } from "../support/taskRuns.ts"
import { videoRequest } from "../support/tasks.ts"

/**
 * An upstream provider away for 60 s while 200 tasks wait on it, the
 * service as a real process on each database: the fake Ark (its API and its
 * result links) behind the fault proxy refuses connections for 15 s, resets
 * them for 15 s, black-holes them for 15 s, then answers every request
 * with an HTML 503 page for 15 s. Tasks that finish upstream meanwhile are
 * fetched once it is back. No task is lost or failed, none is submitted
 * twice, each is charged once and never refunded.
 */

const ARK_KEY = "ark-key-provider-away-0123"
const MODEL = "provy-famS-2.0-480p"
const TASKS = 200
const GRANTED = { wallet: 10_000, subscription: 0 }

let ark: FakeArk
let proxy: FaultProxy
let inst: Installation | undefined
let service: Service | undefined

beforeAll(async () => {
  ark = await startFakeArk([ARK_KEY])
  proxy = await startFaultProxy({ port: Number(new URL(ark.url).port) })
  // Result links go through the proxy too: downloads meet the outage as polls do.
  ark.useOrigin(`http://127.0.0.1:${proxy.port}`)
})
afterEach(async (context) => {
  if (context.task.result?.state === "fail" && service !== undefined) {
    const notable = service.output().split("\n").filter((l) => !l.includes("\"message\":\"request\"")).slice(-60)
    console.error(notable.join("\n"))
  }
  if (service !== undefined) await kill(service)
  await inst?.close()
})
afterAll(async () => {
  await proxy?.close()
  await ark?.close()
})

describe(`a provider away, the service as a process (${backend})`, { timeout: 420_000 }, () => {
  it("Ark refused, reset, black-holed and answering 503 pages for 60 s under 200 waiting tasks: all succeed, one upstream task each", async () => {
    const config = alsoWith(
      configWith("models.json", (models) => {
        models.channels.byteplus = {
          adapter: "ark",
          base_url: `http://127.0.0.1:${proxy.port}/api/v3`,
          credentials: { api_key: { env: "ARK_KEY" } },
          concurrency: TASKS,
          // A create that times out is final at Ark (no find): submit_s is generous, since a loaded machine can keep
          // 200 creates' answers waiting seconds, and this test is about a provider away after its tasks were taken.
          timeouts: { submit_s: 30, poll_s: 3, download_s: 10, deadline_s: 900 }
        }
        models.models[MODEL].channels = [{ channel: "byteplus", upstream_model: "dreamina-seedance-2-0-260128" }]
      }),
      "limits.json",
      (limits) => {
        limits.engine = { poll_interval_ms: 500 }
        for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.burst = rate.per_second = 10_000
      }
    )
    inst = await installation()
    service = await inst.serve("all", config, { env: { ARK_KEY } })
    const acct = await createAccount(inst.target, { name: "provider away", wallet_credits: GRANTED.wallet })
    // Time-driven timelines: a task ends 13 to 73 s after its create, so most end while Ark is away, even when
    // the creates take a while.
    for (let i = 0; i < TASKS; i++) ark.scenarios.push({ stepMs: 1000, queued: 10, running: 2 + (i % 61) })

    const ids: Array<string> = []
    for (let batch = 0; batch < TASKS / 20; batch++) {
      ids.push(
        ...await Promise.all(Array.from({ length: 20 }, (_, i) =>
          createVideoTask(
            inst!.target,
            acct.model.key,
            videoRequest({ model: MODEL, input: { prompt: `away ${batch * 20 + i}` } })
          )))
      )
    }
    // Every task taken upstream before Ark goes away (on a loaded machine the first may have finished already).
    await untilStatuses(
      inst.target,
      acct.resource.key,
      ids,
      (s) => ark.tasks.size === TASKS && s.every((x) => x === "in_progress" || x === "succeeded"),
      120_000
    )
    // ...and every create's answer recorded: an answer still on its way when the proxy cuts connections is lost,
    // and a create whose answer is lost is final at Ark.
    await eventually(
      async () =>
        (await Promise.all(ids.map((id) => operator(inst!.target).task(id)))).every((t) =>
          t.engine.submitted_at !== null
        ),
      "every create's answer recorded",
      { deadlineMs: 60_000, intervalMs: 500 }
    )
    expect(ark.tasks.size).toBe(TASKS)

    // The sleeps are the scenario: each outage held open for 15 s.
    for (const mode of ["refuse", "reset", "blackhole"] as const) {
      await proxy.set(mode)
      await sleep(15_000)
    }
    await proxy.set("pass")
    ark.outage = { kind: "html", status: 503 }
    await sleep(15_000)
    ark.outage = undefined

    await untilStatuses(inst.target, acct.resource.key, ids, (s) => s.every((x) => x === "succeeded"), 240_000)
    // One create each, none sent again.
    const creates = ark.requests.filter((r) => r.method === "POST")
    expect(creates).toHaveLength(TASKS)
    expect(ark.tasks.size).toBe(TASKS)
    await stop(service)
    await withDatabase({ dbUrl: inst.db.url, dataDir: inst.dataDir }, async (rows) => {
      await checkBooks(rows, acct.id, GRANTED, new Map(ids.map((id) => [id, "succeeded" as const])))
      const upstream = await rows(
        `SELECT count(DISTINCT upstream_id)::int AS n, max(attempt)::int AS attempts
        FROM tasks WHERE account_id = $1`,
        [acct.id]
      )
      expect(upstream[0]).toEqual({ n: TASKS, attempts: 1 })
    })
  })
})
