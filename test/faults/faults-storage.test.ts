import { mkdtempSync, readdirSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { type FakeArk, startFakeArk } from "../fakes/ark.ts"
import { mp4 } from "../fakes/arkTasks.ts"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { checkBooks } from "../support/books.ts"
import { alsoWith, configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually, sleep } from "../support/eventually.ts"
import { type FaultProxy, startFaultProxy } from "../support/faultProxy.ts"
import { errorOf, expectError, raw } from "../support/http.ts"
import { type Installation, installation, withDatabase } from "../support/installation.ts"
import { probeBytes } from "../support/media.ts"
import { replyOf } from "../support/opsApi.ts"
import { kill, type Service, stop, waitForLog } from "../support/process.ts"
import { startS3rver } from "../support/s3rver.ts"
import { createVideoTask, untilStatuses, videoTaskStates } from "../support/taskRuns.ts"
import { resultOf, videoRequest } from "../support/tasks.ts"
import { confirm, createSessions, image, makeImage, putBytes, rawComplete, rawSessions } from "../support/uploads.ts"

/**
 * Object storage (S3, through the fault proxy) goes away while tasks are
 * running, with the service as a real process on each database. A result
 * that exists is never failed because of it: the sandbox's renders wait in
 * the spool, an upstream's results wait upstream, a SIGKILL in the middle
 * loses neither, and everything is stored once the store is back, byte for
 * byte, each task charged once and never refunded. Callers meanwhile get
 * 503 `storage_unavailable` with Retry-After, and `/readyz` names the store.
 * Past `storage.outage_grace_s` the tasks fail with their refund.
 */

const ARK_KEY = "ark-key-faults-0123456789"
const SANDBOX_MODEL = "provy-famS-2.0-480p"
const ARK_MODEL = "provy-famS-2.0-720p"
const GRANTED = { wallet: 1000, subscription: 0 }
/**
 * How long the store stays away in the first test: 20 s, or `FAULTS_OUTAGE_S`
 * for a longer probe (docs/engine.md records a 5-minute run).
 */
const OUTAGE_MS = Number(process.env.FAULTS_OUTAGE_S ?? 20) * 1000
const SPOOLED = "the result waits in the spool for object storage"
const LEFT_UPSTREAM = "object storage is away; the result waits upstream and is fetched again"

let s3: Awaited<ReturnType<typeof startS3rver>>
let proxy: FaultProxy
let ark: FakeArk
const installations: Array<Installation> = []
const services: Array<Service> = []
/** Every process of the running test, killed ones too: shown when it fails. */
const allServices: Array<Service> = []

beforeAll(async () => {
  s3 = await startS3rver("gw-faults")
  proxy = await startFaultProxy({ port: Number(new URL(s3.endpoint).port) })
  ark = await startFakeArk([ARK_KEY])
}, 60_000)
afterEach(async (context) => {
  if (context.task.result?.state === "fail") {
    for (const service of allServices) {
      const notable = service.output().split("\n").filter((l) => !l.includes("\"message\":\"request\""))
      // The whole log is kept in a file (CI shows the path), the end of it shown here.
      const file = join(mkdtempSync(join(tmpdir(), "gw-faults-log-")), `service-${service.child.pid}.log`)
      writeFileSync(file, notable.join("\n"))
      console.error(`--- pid ${service.child.pid} (whole log: ${file}) ---\n${notable.slice(-80).join("\n")}`)
    }
  }
  allServices.splice(0)
  await Promise.all(services.splice(0).map(kill))
  await proxy.set("pass")
  for (const i of installations.splice(0)) await i.close()
})
afterAll(async () => {
  await proxy?.close()
  await ark?.close()
  await s3?.close()
})

/** The sandbox model on the sandbox, one famS model on the fake Ark; storage bounded by a 2 s call time-out. */
const faultConfig = (graceS: number) => {
  const dir = configWith("models.json", (models) => {
    models.channels.sandbox = { ...models.channels.sandbox, concurrency: 50 }
    models.channels.byteplus = {
      adapter: "ark",
      base_url: ark.url,
      credentials: { api_key: { env: "ARK_KEY" } },
      concurrency: 50,
      // Ark has no way to find a task whose create went unanswered, so such a create fails its task by design.
      // Fifty renders and creates at once on a loaded machine can hold an answer past 5 s; this test is about
      // the store, so a create has long enough. Polls stay short: a missed one is only asked again.
      timeouts: { submit_s: 30, poll_s: 5 }
    }
    models.models[SANDBOX_MODEL].channels = ["sandbox"]
    models.models[ARK_MODEL].channels = [{ channel: "byteplus", upstream_model: "dreamina-seedance-2-0-260128" }]
  })
  return alsoWith(dir, "limits.json", (limits) => {
    limits.engine = { poll_interval_ms: 200, heartbeat_s: 1, lease_s: 10, reaper_interval_s: 1, max_attempts: 5 }
    limits.storage = { outage_grace_s: graceS, request_timeout_s: 2 }
    for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.burst = rate.per_second = 10_000
  })
}

/** An installation whose S3 is the proxy, and a serving process of it (ROLE=all). */
const setUp = async (graceS: number) => {
  const inst = await installation()
  installations.push(inst)
  const config = faultConfig(graceS)
  const env = { ...s3.env, S3_ENDPOINT: `http://127.0.0.1:${proxy.port}`, ARK_KEY }
  const serve = async () => {
    const service = await inst.serve("all", config, { env })
    services.push(service)
    allServices.push(service)
    return service
  }
  return { inst, serve }
}

/** Every log line of these processes with this message. */
const logged = (processes: ReadonlyArray<Service>, message: string) =>
  processes.flatMap((s) => s.logs()).filter((l) => l.message === message)

/** The spool's task folders left in a data directory (its `id` file aside). */
const spooled = (dataDir: string) => readdirSync(join(dataDir, "spool")).filter((name) => name !== "id")

/** The spool's folders once it is empty, or what is left after 10 s (a folder goes just after its task's outcome). */
const spoolEmptied = (dataDir: string) =>
  eventually(() => spooled(dataDir).length === 0, "the spool emptied", { deadlineMs: 10_000 }).then(
    () => spooled(dataDir),
    () => spooled(dataDir)
  )

describe(`storage outages, the service as a process (${backend})`, { timeout: 300_000 + 2 * OUTAGE_MS }, () => {
  it(`S3 away for ${OUTAGE_MS / 1000} s (refused, then black-holed) with a SIGKILL in between: 50 tasks all succeed, byte for byte, charged once`, async () => {
    const { inst, serve } = await setUp(900)
    const first = await serve()
    const acct = await createAccount(inst.target, { name: "outage", wallet_credits: GRANTED.wallet })
    // Ark's tasks finish 2 to 4 s after their create, inside the outage.
    for (let i = 0; i < 15; i++) ark.scenarios.push({ stepMs: 500, queued: 2, running: 2 + (i % 4) })
    // Before the outage: a result stored, and an upload PUT to the bucket but not yet confirmed.
    const earlyId = await createVideoTask(inst.target, acct.model.key, videoRequest({ model: SANDBOX_MODEL }))
    await untilStatuses(inst.target, acct.resource.key, [earlyId], (s) => s[0] === "succeeded", 60_000)
    const [early] = await videoTaskStates(inst.target, acct.resource.key, [earlyId])
    const png = await makeImage("png", "320x240")
    const session = (await createSessions(inst.target, acct.resource.key, [image(png)]))[0]!
    expect(await putBytes(session, png)).toBe(200)

    await proxy.set("refuse")
    const outageStart = Date.now()
    const sandboxIds = await Promise.all(Array.from({ length: 35 }, () =>
      createVideoTask(
        inst.target,
        acct.model.key,
        videoRequest({ model: SANDBOX_MODEL, provider_options: { sandbox: { delay_ms: 1000 } } })
      )))
    const arkIds = await Promise.all(Array.from({ length: 15 }, (_, i) =>
      createVideoTask(
        inst.target,
        acct.model.key,
        videoRequest({ model: ARK_MODEL, input: { prompt: `an outage, take ${i}` } })
      )))
    const ids = [...sandboxIds, ...arkIds]

    // Both ways of waiting are taken before the crash: the sandbox's renders go to the spool, Ark's results
    // stay upstream.
    const spooledTask = (await waitForLog(first, (l) => l.message === SPOOLED, 120_000)).annotations.task_id
    const upstreamTask = (await waitForLog(first, (l) => l.message === LEFT_UPSTREAM, 120_000)).annotations.task_id
    // Operators see what waits, where and since when.
    const inSpool = await operator(inst.target).task(spooledTask)
    expect(inSpool.engine).toMatchObject({ run_state: "storing", spool_id: expect.any(String) })
    expect(inSpool.engine.store_since).toBeGreaterThan(outageStart)
    const atUpstream = await operator(inst.target).task(upstreamTask)
    expect(atUpstream.engine).toMatchObject({
      run_state: expect.stringMatching(/^(waiting|polling)$/),
      spool_id: null
    })
    expect(atUpstream.engine.store_since).toBeGreaterThan(outageStart)

    // Callers are told to come back, never given a 500; the store is named as what is down.
    for (
      const refused of [
        await rawSessions(inst.target, acct.resource.key, [image(png)]),
        await rawComplete(inst.target, acct.resource.key, [session.id]),
        await raw(inst.target, "GET", `/v1/assets/${resultOf(early).videos[0].asset_id}/content`, {
          key: acct.resource.key
        })
      ]
    ) {
      expectError(refused, 503, "storage_unavailable", "api_error")
      expect(Number(refused.headers.get("retry-after"))).toBeGreaterThan(0)
    }
    const ready = await raw(inst.target, "GET", "/readyz")
    expectError(ready, 503, "not_ready", "api_error")
    expect(errorOf(ready.body)?.message).toContain("object storage is unavailable")
    expect(errorOf(ready.body)?.message).not.toContain("database")
    const health = await replyOf(api(inst.target, {}).client((c) => c.resource.ops.healthz({ withResponse: true })))
    expect(health.status).toBe(200)
    // Nothing has failed; the results wait.
    expect((await videoTaskStates(inst.target, acct.resource.key, ids)).filter((t) => t.status === "failed"))
      .toEqual([])

    // A crash while the results wait: the spool and the upstream keep them.
    await kill(first)
    await proxy.set("blackhole")
    const second = await serve()
    // The sleep is the scenario: the outage held open to its full length (10 s at least after the restart).
    await sleep(Math.max(10_000, outageStart + OUTAGE_MS - Date.now()))
    expect((await videoTaskStates(inst.target, acct.resource.key, ids)).filter((t) => t.status === "failed"))
      .toEqual([])

    await proxy.set("pass")
    await untilStatuses(inst.target, acct.resource.key, ids, (s) => s.every((x) => x === "succeeded"), 180_000)
    // What was refused meanwhile works now.
    expect((await confirm(inst.target, acct.resource.key, [session.id])).map((u) => u.id)).toEqual([session.id])
    // The restarted process stored what the first had spooled.
    expect(logged([second], "a result that waited for object storage is stored").length).toBeGreaterThan(0)
    expect(await spoolEmptied(inst.dataDir)).toEqual([])

    // Every result downloads whole: the fake's very bytes for Ark's, a playable 4 s H.264 MP4 for the sandbox's.
    const tasks = await videoTaskStates(inst.target, acct.resource.key, ids)
    for (const task of tasks) {
      const video = resultOf(task).videos[0]
      const bytes = new Uint8Array(await (await fetch(video.url)).arrayBuffer())
      if (arkIds.includes(task.id)) {
        expect(Buffer.from(bytes).equals(Buffer.from(await mp4(4, "16:9", true))), task.id).toBe(true)
      } else {
        const probed = await probeBytes(bytes)
        expect(probed.video?.codec, task.id).toBe("h264")
        expect(probed.durationS, task.id).toBeGreaterThan(3.9)
      }
    }
    await stop(second)
    await withDatabase({ dbUrl: inst.db.url, dataDir: inst.dataDir }, async (rows) => {
      await checkBooks(rows, acct.id, GRANTED, new Map([earlyId, ...ids].map((id) => [id, "succeeded" as const])))
      // One upstream task each: nothing was submitted twice.
      const upstream = await rows(`SELECT count(DISTINCT upstream_id)::int AS n FROM tasks WHERE id = ANY($1)`, [
        arkIds
      ])
      expect(upstream[0].n).toBe(15)
    })
    expect([...ark.tasks.values()].filter((t) => String(t.body.content[0].text).startsWith("an outage")))
      .toHaveLength(15)
  })

  it("past storage.outage_grace_s the waiting tasks fail with their refund, retryable, and the spool is emptied", async () => {
    const { inst, serve } = await setUp(3)
    const service = await serve()
    const acct = await createAccount(inst.target, { name: "grace", wallet_credits: GRANTED.wallet })
    ark.scenarios.push({ stepMs: 300, queued: 1, running: 1 })
    await proxy.set("refuse")
    const ids = [
      await createVideoTask(inst.target, acct.model.key, videoRequest({ model: SANDBOX_MODEL })),
      await createVideoTask(inst.target, acct.model.key, videoRequest({ model: SANDBOX_MODEL })),
      await createVideoTask(inst.target, acct.model.key, videoRequest({ model: ARK_MODEL, input: { prompt: "grace" } }))
    ]
    await untilStatuses(inst.target, acct.resource.key, ids, (s) => s.every((x) => x === "failed"), 120_000)
    for (const task of await videoTaskStates(inst.target, acct.resource.key, ids)) {
      expect(task.error).toMatchObject({ code: "video_task_failed", retryable: true })
    }
    expect(await spoolEmptied(inst.dataDir)).toEqual([])
    await proxy.set("pass")
    await stop(service)
    await withDatabase(
      { dbUrl: inst.db.url, dataDir: inst.dataDir },
      (rows) => checkBooks(rows, acct.id, GRANTED, new Map(ids.map((id) => [id, "failed" as const])))
    )
  })
})
