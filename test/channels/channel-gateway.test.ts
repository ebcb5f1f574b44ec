import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount, operator } from "../support/adminApi.ts"
import { api, rejection } from "../support/api.ts"
import { alsoWith, configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { raw } from "../support/http.ts"
import { probeBytes } from "../support/media.ts"
import { ledgerOf, query, videoRequest } from "../support/tasks.ts"

/**
 * Two gateways chained on loopback (docs/adapters/gateway.md): B runs the
 * sandbox; A routes one video model and one image model to B through a
 * `gateway` channel, so A's engine submits, waits without a lease, polls B's
 * batch query and re-hosts B's results. B's sandbox serves results with
 * `url_auth: resource_api_key`, so A downloads them with B's `ak_` key.
 */

const VIDEO = "provy-famS-2.0-480p"
const IMAGE = "provx-image-1"
const engine = { poll_interval_ms: 200, heartbeat_s: 1, lease_s: 10, retry_base_ms: 50, generate_retries: 2 }
const unthrottle = (limits: any) => {
  limits.engine = engine
  for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.burst = rate.per_second = 10_000
}

let a: TestGateway
let b: TestGateway
let aConfig: string
let aEnv: Record<string, string>

beforeAll(async () => {
  const bConfig = configWith("models.json", (models) => {
    models.channels.sandbox.url_auth = "resource_api_key"
  })
  alsoWith(bConfig, "limits.json", unthrottle)
  b = await startGateway({ ROLE: "all", CONFIG_DIR: bConfig })
  const peer = await createAccount(b, { name: "gateway-a", wallet_credits: 1000 })
  aConfig = configWith("models.json", (models) => {
    models.channels.peer = {
      adapter: "gateway",
      base_url: b.url,
      credentials: { model_token: { env: "PEER_SK" }, resource_key: { env: "PEER_AK" } },
      concurrency: 20
    }
    // The sandbox second: only so A accepts `provider_options.sandbox`, which B's sandbox plays.
    models.models[VIDEO].channels = [{ channel: "peer", upstream_model: VIDEO }, "sandbox"]
    models.models[IMAGE].channels = [{ channel: "peer", upstream_model: IMAGE }]
  })
  alsoWith(aConfig, "limits.json", unthrottle)
  aEnv = { ROLE: "all", CONFIG_DIR: aConfig, PEER_SK: peer.model.key, PEER_AK: peer.resource.key }
  a = await startGateway(aEnv)
}, 60_000)
afterAll(async () => {
  await a?.close()
  await b?.close()
})

const bTasksFor = (aTaskId: string) =>
  query<{ id: string; status: string }>(
    b,
    (sql) => sql`SELECT id, status FROM tasks WHERE idempotency_key = ${aTaskId}`
  )

/** Nothing of B reaches A's caller: its ids, its address, the channel's name. */
const expectNothingOfB = async (task: any) => {
  const text = JSON.stringify(task)
  for (const bTask of await bTasksFor(task.id)) expect(text).not.toContain(bTask.id)
  expect(text).not.toContain(b.url)
  expect(text).not.toContain("peer")
}

describe(`the gateway channel (${backend})`, () => {
  it("a video task on A runs on B, is re-hosted by A and plays; B holds exactly one task for it", async () => {
    const acct = await createAccount(a, { name: "caller", wallet_credits: 100 })
    const created = await api(a, acct).createVideoReply(videoRequest())
    expect(created.status).toBe(202)
    const task = (await api(a, acct).waitTask("video", created.task.id)).at(-1)!
    expect(task.status).toBe("succeeded")
    const video = task.result!.videos[0]!
    expect(video.url.startsWith(a.url)).toBe(true)
    const bytes = new Uint8Array(await (await fetch(video.url)).arrayBuffer())
    const probed = await probeBytes(bytes)
    expect(probed.formatName).toContain("mp4")
    expect(probed.video?.codec).toBe("h264")
    expect(probed.durationS).toBeGreaterThan(3.5)
    const held = await bTasksFor(task.id)
    expect(held).toHaveLength(1)
    expect(held[0]!.status).toBe("succeeded")
    await expectNothingOfB(task)
    const [row] = await query<{ run_state: string; upstream_id: string }>(
      a,
      (sql) => sql`SELECT run_state, upstream_id FROM tasks WHERE id = ${task.id}`
    )
    expect(row).toEqual({ run_state: "done", upstream_id: held[0]!.id })
  }, 120_000)

  it("an image task on A runs on B and comes back as A's own asset", async () => {
    const acct = await createAccount(a, { name: "images", wallet_credits: 100 })
    const body = {
      model: IMAGE,
      operation: "generation",
      input: { prompt: "a lighthouse" },
      output: { size: "1024x1024", format: "png", count: 1 }
    } as const
    const created = await api(a, acct).createImageReply(body)
    expect(created.status).toBe(202)
    const task = (await api(a, acct).waitTask("image", created.task.id)).at(-1)!
    expect(task.status).toBe("succeeded")
    const image = task.result!.images[0]!
    const png = new Uint8Array(await (await fetch(image.url)).arrayBuffer())
    expect([...png.slice(1, 4)]).toEqual([0x50, 0x4e, 0x47])
    expect(await bTasksFor(task.id)).toHaveLength(1)
    await expectNothingOfB(task)
  }, 120_000)

  it("operators see the task's account, ledger, attempts, channel and upstream answer; callers never do", async () => {
    const acct = await createAccount(a, { name: "audited", wallet_credits: 100 })
    const created = await api(a, acct).createVideo(videoRequest())
    const task = (await api(a, acct).waitTask("video", created.id)).at(-1)!
    expect(task.status).toBe("succeeded")
    const [upstream] = await bTasksFor(task.id)

    // A 200: the typed admin client decodes the contract's answer or fails.
    const view = await operator(a).task(task.id)
    expect(view.object).toBe("admin.task")
    expect(view.task).toEqual(task)
    expect(view.account?.id).toBe(acct.id)
    expect(view.ledger.map((l) => (l as { kind?: unknown }).kind)).toEqual(["charge"])
    expect(view.channels_tried).toEqual(["peer"])
    expect(view.engine).toMatchObject({
      run_state: "done",
      channel: "peer",
      upstream_id: upstream!.id,
      upstream_model: VIDEO
    })
    expect(view.attempts).toHaveLength(1)
    expect(view.attempts[0]).toMatchObject({
      attempt: 1,
      channel: "peer",
      upstream_id: upstream!.id,
      outcome: "succeeded"
    })
    expect(view.attempts[0]?.last_answer).toMatchObject({ id: upstream!.id, status: "succeeded" })

    // Not with a caller's keys, and unknown ids are 404.
    for (const key of [acct.model.key, acct.resource.key]) {
      expect((await raw(a, "GET", `/admin/v1/tasks/${task.id}`, { key })).status).toBe(401)
    }
    expect((await rejection(operator(a).task("task_doesnotexist0000000000"))).status).toBe(404)
  }, 120_000)

  it("a task failing on B fails on A with B's code, refunded on A", async () => {
    const acct = await createAccount(a, { name: "failing", wallet_credits: 100 })
    const created = await api(a, acct).createVideoReply(
      videoRequest({ provider_options: { sandbox: { outcome: "fail" } } })
    )
    expect(created.status).toBe(202)
    const task = (await api(a, acct).waitTask("video", created.task.id)).at(-1)!
    expect(task.status).toBe("failed")
    expect(task.error?.code).toBe("video_task_failed")
    const ledger = await ledgerOf(a, task.id)
    expect(ledger.map((l) => l.kind)).toEqual(["charge", "refund"])
    expect(ledger[0]!.wallet_micros + ledger[1]!.wallet_micros).toBe(0)
    expect(await bTasksFor(task.id)).toHaveLength(1)
    await expectNothingOfB(task)
  }, 120_000)

  it("tasks waiting on B when A restarts finish after the restart; none is submitted twice", async () => {
    const acct = await createAccount(a, { name: "restart", wallet_credits: 100 })
    const ids: Array<string> = []
    for (let i = 0; i < 3; i++) {
      const created = await api(a, acct).createVideoReply(
        videoRequest({ provider_options: { sandbox: { delay_ms: 4000 } } })
      )
      expect(created.status).toBe(202)
      ids.push(created.task.id)
    }
    // Every task submitted and waiting upstream, holding no lease.
    for (const id of ids) {
      await api(a, acct).waitTask("video", id, () => true)
      const row = await eventually(async () => {
        const [row] = await query<{ run_state: string; lease_owner: string | null }>(
          a,
          (sql) => sql`SELECT run_state, lease_owner FROM tasks WHERE id = ${id}`
        )
        return row!.run_state === "waiting" && row
      }, `task ${id} waits upstream`)
      expect(row!.lease_owner).toBeNull()
    }
    await a.stop()
    a = await startGateway(aEnv, undefined, {}, backend, a)
    for (const id of ids) {
      const task = (await api(a, acct).waitTask("video", id)).at(-1)
      expect(task?.status).toBe("succeeded")
      expect(await bTasksFor(id)).toHaveLength(1)
      const ledger = await ledgerOf(a, id)
      expect(ledger.map((l) => l.kind)).toEqual(["charge"])
    }
  }, 180_000)
})
