import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { VideoTaskRequest } from "../../src/client/Tasks.ts"
import type { VideoTask } from "../../src/tasks/Task.ts"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { ARK_KEY, type ArkSetup, startArkGateway, UPSTREAM } from "../support/ark.ts"
import { alsoWith, configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import {
  expectNothingUpstream,
  type FakeGatewayEnv,
  startFakeGatewayEnv,
  videoTask as gatewayTask
} from "../support/fakeGateway.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { FAST, startVideosGateway, type VideosGateway, videoTask as videosTask } from "../support/openaiVideos.ts"
import { errorBody, refused, taskApi } from "../support/taskApi.ts"
import { eventsOf, query, videoRequest } from "../support/tasks.ts"
import { expectChargedOnce, expectRefunded } from "../support/upstream.ts"

/**
 * Cancelling a task that waits upstream (docs/adapters/*.md, Cancel): through
 * the adapter's `cancel` where the protocol has one (Ark's DELETE of a queued
 * task, a chained gateway's own cancel), 409 `task_not_cancellable` where the
 * upstream refuses or has none, and the task then goes on to its normal end.
 */

type Setup = { readonly gw: TestGateway }

/** Creates a task and waits until the engine holds it waiting upstream. */
const createWaiting = async (setup: Setup, body: VideoTaskRequest, name: string) => {
  const acct = await createAccount(setup.gw, { name, wallet_credits: 100 })
  const created = await api(setup.gw, acct).createVideoReply(body)
  expect(created.status).toBe(202)
  const id = created.task.id
  await eventually(async () => {
    const [row] = await query<{ run_state: string; polls: number }>(
      setup.gw,
      (sql) => sql`SELECT run_state, polls FROM tasks WHERE id = ${id}`
    )
    return row !== undefined && ["waiting", "polling"].includes(row.run_state) && row.polls > 0 || undefined
  }, "the task waits upstream, polled once")
  return { acct, id }
}

/** The cancel; a 200 or it rejects (the typed client decodes the contract's answer or fails). */
const cancel = (gw: TestGateway, key: string, id: string) => taskApi(gw, { resource: key }).cancelVideo(id)

const expectCancelled = async (gw: TestGateway, reply: VideoTask, id: string) => {
  expect(reply).toMatchObject({ id, status: "failed", error: { code: "task_cancelled", retryable: false } })
  await expectRefunded(gw, id)
  expect((await eventsOf(gw, id)).map((e) => e.type)).toEqual(["video.task.failed"])
}

describe(`cancel through Ark (${backend})`, () => {
  const TEXT = "provy-famS-2.0-480p"
  let ark: ArkSetup
  beforeAll(async () => {
    ark = await startArkGateway({ [TEXT]: [{ channel: "byteplus", upstream_model: UPSTREAM }] })
  }, 60_000)
  afterAll(() => ark?.close())

  const upstreamOf = (prompt: string) => [...ark.fake.tasks.values()].filter((t) => t.body.content[0].text === prompt)
  const deletes = () => ark.fake.requests.filter((r) => r.method === "DELETE")

  it("a task queued at Ark is cancelled by a DELETE: ours ends task_cancelled, refunded, its event recorded", async () => {
    ark.fake.scenarios.push({ queued: Infinity })
    const before = deletes().length
    const { acct, id } = await createWaiting(ark, videoRequest({ model: TEXT, input: { prompt: "ark queued" } }), "a1")
    const reply = await cancel(ark.gw, acct.resource.key, id)
    await expectCancelled(ark.gw, reply, id)
    const [upstream] = upstreamOf("ark queued")
    expect(upstream!.cancelled).toBe(true)
    expect(deletes().slice(before).map((r) => r.path)).toEqual([`/api/v3/contents/generations/tasks/${upstream!.id}`])
    expect(deletes().at(-1)!.headers.authorization).toBe(`Bearer ${ARK_KEY}`)
    // The caller sees none of Ark; the operator sees why the attempt ended.
    expect(JSON.stringify(reply)).not.toContain(upstream!.id)
    const view = await operator(ark.gw).task(id)
    expect(view.attempts.at(-1)).toMatchObject({ outcome: "cancelled", upstream_id: upstream!.id })
    // Ark now says `cancelled` too; nothing polls a task that ended, so it stays as the cancel left it.
    const again = await api(ark.gw, acct).getVideo(id)
    expect(again).toEqual(reply)
    await expectRefunded(ark.gw, id)
  })

  it("a task running at Ark: 409 task_not_cancellable naming why, no DELETE sent, and it succeeds normally", async () => {
    ark.fake.scenarios.push({ queued: 0, running: 8, end: "succeeded" })
    const before = deletes().length
    const { acct, id } = await createWaiting(ark, videoRequest({ model: TEXT, input: { prompt: "ark running" } }), "a2")
    const reply = await refused(
      cancel(ark.gw, acct.resource.key, id),
      409,
      "task_not_cancellable",
      "conflict_error"
    )
    expect(reply.message).toMatch(/already started/)
    expect(deletes().length).toBe(before)
    const task = (await api(ark.gw, acct).waitTask("video", id)).at(-1)
    expect(task?.status).toBe("succeeded")
    await expectChargedOnce(ark.gw, id)
  })
})

describe(`cancel through the gateway adapter, fake upstream (${backend})`, () => {
  let env: FakeGatewayEnv
  beforeAll(async () => {
    env = await startFakeGatewayEnv()
  }, 60_000)
  afterAll(() => env?.close())

  const cancels = () => env.fake.requests.filter((r) => r.path.endsWith("/cancel"))

  it("a task queued upstream: the upstream's cancel with the ak_ key, then ours ends cancelled", async () => {
    env.fake.lives.push({ prompt: "gw queued", statuses: ["queued"] })
    const { acct, id } = await createWaiting(env, gatewayTask("gw queued"), "g1")
    const reply = await cancel(env.gw, acct.resource.key, id)
    await expectCancelled(env.gw, reply, id)
    const [upstream] = [...env.fake.tasks.values()].filter((t) => t.prompt === "gw queued")
    expect(upstream!.cancelled).toBe(true)
    const sent = cancels().at(-1)!
    expect(sent.path).toBe(`/v1/video/tasks/${upstream!.id}/cancel`)
    expect(sent.headers.authorization).toMatch(/^Bearer ak_/)
    expectNothingUpstream(env, reply)
  })

  it("a task the upstream already runs: 409, and it goes on to succeed", async () => {
    env.fake.lives.push({ prompt: "gw running", statuses: ["in_progress", "in_progress", "in_progress", "succeeded"] })
    const { acct, id } = await createWaiting(env, gatewayTask("gw running"), "g2")
    const reply = await refused(
      cancel(env.gw, acct.resource.key, id),
      409,
      "task_not_cancellable",
      "conflict_error"
    )
    expectNothingUpstream(env, errorBody(reply))
    const task = (await api(env.gw, acct).waitTask("video", id)).at(-1)
    expect(task?.status).toBe("succeeded")
    await expectChargedOnce(env.gw, id)
  })

  it("an upstream whose cancel fails (503): 409 asking to try again, the task untouched; the next try works", async () => {
    env.fake.lives.push({ prompt: "gw flaky", statuses: ["queued"] })
    const { acct, id } = await createWaiting(env, gatewayTask("gw flaky"), "g3")
    env.fake.faults.cancel.push({ kind: "status", status: 503 })
    const refusal = await refused(cancel(env.gw, acct.resource.key, id), 409, "task_not_cancellable")
    expect(refusal.message).toMatch(/try again/)
    const read = await api(env.gw, acct).getVideo(id)
    expect(read.status).toBe("in_progress")
    await expectCancelled(env.gw, await cancel(env.gw, acct.resource.key, id), id)
  })
})

describe(`cancel where the upstream has none (${backend})`, () => {
  let videos: VideosGateway
  beforeAll(async () => {
    videos = await startVideosGateway()
  }, 60_000)
  afterAll(() => videos?.close())

  it("openai-videos: 409 task_not_cancellable, nothing sent upstream, the task goes on and succeeds", async () => {
    videos.fake.lives.push({
      prompt: "no cancel here",
      statuses: ["queued", "in_progress", "in_progress", "completed"]
    })
    const { acct, id } = await createWaiting(videos, videosTask("no cancel here", { model: FAST }), "v1")
    const before = videos.fake.requests.length
    const reply = await refused(
      cancel(videos.gw, acct.resource.key, id),
      409,
      "task_not_cancellable",
      "conflict_error"
    )
    expect(reply.message).toMatch(/cannot cancel/)
    expect(videos.fake.requests.slice(before).filter((r) => r.method !== "GET")).toEqual([])
    const task = (await api(videos.gw, acct).waitTask("video", id)).at(-1)
    expect(task?.status).toBe("succeeded")
    await expectChargedOnce(videos.gw, id)
  })
})

describe(`cancel through chained gateways (${backend})`, () => {
  const VIDEO = "provy-famS-2.0-480p"
  let a: TestGateway
  let b: TestGateway
  beforeAll(async () => {
    const quick = (limits: any) => {
      limits.engine = { poll_interval_ms: 200, heartbeat_s: 1, lease_s: 10, retry_base_ms: 50, generate_retries: 2 }
      for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.burst = rate.per_second = 10_000
    }
    b = await startGateway({ ROLE: "all", CONFIG_DIR: configWith("limits.json", quick) })
    const peer = await createAccount(b, { name: "gateway-a", wallet_credits: 1000 })
    const aConfig = configWith("models.json", (models) => {
      models.channels.peer = {
        adapter: "gateway",
        base_url: b.url,
        credentials: { model_token: { env: "PEER_SK" }, resource_key: { env: "PEER_AK" } },
        concurrency: 20
      }
      models.models[VIDEO].channels = [{ channel: "peer", upstream_model: VIDEO }, "sandbox"]
    })
    alsoWith(aConfig, "limits.json", quick)
    a = await startGateway({ ROLE: "all", CONFIG_DIR: aConfig, PEER_SK: peer.model.key, PEER_AK: peer.resource.key })
  }, 60_000)
  afterAll(async () => {
    await a?.close()
    await b?.close()
  })

  it("A cancels through B: B interrupts its running sandbox task and refunds A; A refunds its caller", async () => {
    const slow = videoRequest({ model: VIDEO, provider_options: { sandbox: { delay_ms: 60_000 } } })
    const { acct, id } = await createWaiting({ gw: a }, slow, "chain")
    const [bTask] = await query<{ id: string; status: string }>(
      b,
      (sql) => sql`SELECT id, status FROM tasks WHERE idempotency_key = ${id}`
    )
    expect(bTask!.status).toBe("in_progress")
    const reply = await cancel(a, acct.resource.key, id)
    await expectCancelled(a, reply, id)
    const [bAfter] = await query<{ status: string; code: string }>(
      b,
      (sql) => sql`SELECT status, error->>'code' AS code FROM tasks WHERE id = ${bTask!.id}`
    )
    expect(bAfter).toEqual({ status: "failed", code: "task_cancelled" })
    await expectRefunded(b, bTask!.id)
    // A second cancel at A answers the cancelled task again, asking B nothing.
    // A 200 (the typed client decodes the contract's answer or fails).
    const again = await cancel(a, acct.resource.key, id)
    expect(again).toEqual(reply)
  }, 60_000)
})
