import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { DASHSCOPE_BASE_URL } from "../../channels/alibaba/index.ts"
import { createAccount, operator } from "../support/adminApi.ts"
import {
  type AlibabaSetup,
  expectChargedOnce,
  expectNothingUpstream,
  expectRefunded,
  famW,
  FAMW_1080,
  FAMW_480,
  FAMW_720,
  KEY,
  runAlibaba,
  startAlibabaGateway
} from "../support/alibaba.ts"
import { api, rejection } from "../support/api.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { probeBytes } from "../support/media.ts"
import { refused, taskApi } from "../support/taskApi.ts"
import { ledgerOf, query } from "../support/tasks.ts"

/**
 * The `alibaba` adapter against a fake DashScope speaking the video-synthesis
 * protocol over HTTP (docs/adapters/alibaba.md): famW text-only and
 * first-frame requests on one route, each sent to the line's text-to-video
 * or image-to-video model with the exact body DashScope documents; the
 * result re-hosted and playable; the usage DashScope reports; a cancel of a
 * queued task and the refusal for a running one; what a route's line cannot
 * take refused at creation. Faults and checks: channel-alibaba-faults.test.ts.
 */

const CREATE = "/api/v1/services/aigc/video-generation/video-synthesis"
const FIRST_FRAME = "http://127.0.0.1:9/first-frame.png"

let setup: AlibabaSetup
beforeAll(async () => {
  setup = await startAlibabaGateway({
    // The route names the line's text-to-video model, or its image-to-video one: either serves both kinds.
    [FAMW_720]: [{ channel: "dashscope", upstream_model: "wan2.5-t2v-preview" }],
    [FAMW_480]: [{ channel: "dashscope", upstream_model: "wan2.5-i2v-preview" }],
    // The silent line of 5 s videos: its limits are the route's.
    [FAMW_1080]: [{ channel: "dashscope", upstream_model: "wan2.2-t2v-plus" }]
  })
}, 90_000)
afterAll(async () => {
  await setup?.close()
})

const download = async (task: any) => {
  const video = task.result.videos[0]
  // Re-hosted: served by the gateway itself, never DashScope's link.
  expect(new URL(video.url).origin).toBe(setup.gw.url)
  return probeBytes(new Uint8Array(await (await fetch(video.url)).arrayBuffer()))
}

const upstreamOf = (prompt: string) => [...setup.fake.tasks.values()].filter((t) => t.body.input.prompt === prompt)

describe(`the alibaba channel (${backend})`, { timeout: 90_000 }, () => {
  it("defaults to DashScope's Singapore endpoint", () => {
    expect(DASHSCOPE_BASE_URL).toBe("https://dashscope-intl.aliyuncs.com")
  })

  it("a text-only famW task: one create of the t2v model with the documented body, a re-hosted MP4, its usage", async () => {
    const run = await runAlibaba(
      setup,
      famW(FAMW_720, "a lantern festival over the river", {
        output: { duration: 10, aspect_ratio: "16:9", generate_audio: false },
        provider_options: { famW: { negative_prompt: "blurry, low quality", seed: 42, prompt_extend: false } }
      })
    )
    expect(run.task.status).toBe("succeeded")
    expect(run.creates).toHaveLength(1)
    const [sent] = run.creates
    expect(sent!.path).toBe(CREATE)
    expect(sent!.headers.authorization).toBe(`Bearer ${KEY}`)
    expect(sent!.headers["x-dashscope-async"]).toBe("enable")
    expect(sent!.headers["content-type"]).toMatch(/^application\/json/)
    expect(sent!.body).toEqual({
      model: "wan2.5-t2v-preview",
      input: { prompt: "a lantern festival over the river", negative_prompt: "blurry, low quality" },
      parameters: { size: "1280*720", duration: 10, seed: 42, prompt_extend: false, audio: false }
    })
    expect(upstreamOf("a lantern festival over the river")).toHaveLength(1)
    const [upstream] = upstreamOf("a lantern festival over the river")
    // Polled by its id with the key, no async header on the reads.
    const polls = run.requests.filter((r) => r.method === "GET" && r.path === `/api/v1/tasks/${upstream!.id}`)
    expect(polls.length).toBeGreaterThanOrEqual(3)
    expect(polls.every((p) => p.headers.authorization === `Bearer ${KEY}`)).toBe(true)
    // The OSS link is fetched without the DashScope key.
    const fetched = run.requests.find((r) => r.path === `/oss/${upstream!.id}.mp4`)
    expect(fetched?.headers.authorization).toBeUndefined()

    const probed = await download(run.task)
    expect(probed.formatName).toContain("mp4")
    expect(probed.video).toMatchObject({ codec: "h264", width: 1280, height: 720 })
    expect(probed.durationS).toBeGreaterThan(9.5)
    expect(run.task.result!.videos[0]).toMatchObject({ mime_type: "video/mp4", width: 1280, height: 720 })
    expectNothingUpstream(setup, run.task)
    await expectChargedOnce(setup.gw, run.task.id)

    // Operators see the upstream id, its last answer and the seconds DashScope bills.
    const view = await operator(setup.gw).task(run.task.id)
    expect(view.engine).toMatchObject({ channel: "dashscope", upstream_id: upstream!.id })
    const attempt = view.attempts.at(-1)!
    expect(attempt).toMatchObject({ upstream_id: upstream!.id, outcome: "succeeded", billed: true })
    expect(attempt.usage).toMatchObject({ unit: "second", quantity: 10 })
    expect(attempt.last_answer).toMatchObject({
      output: { task_id: upstream!.id, task_status: "SUCCEEDED" },
      usage: { video_duration: 10, video_ratio: "1280*720", video_count: 1 }
    })
  })

  it("a first-frame task on the same route: one create of the i2v model, img_url and the resolution tier", async () => {
    const run = await runAlibaba(
      setup,
      famW(FAMW_720, "the portrait starts to smile", { input: { image: { url: FIRST_FRAME } } })
    )
    expect(run.task.status).toBe("succeeded")
    expect(run.creates.map((c) => c.body)).toEqual([{
      model: "wan2.5-i2v-preview",
      input: { prompt: "the portrait starts to smile", img_url: FIRST_FRAME },
      // A soundtrack unless asked not to: the caller's default generate_audio (true) is sent.
      parameters: { resolution: "720P", duration: 5, audio: true }
    }])
    expect(upstreamOf("the portrait starts to smile")).toHaveLength(1)
    const probed = await download(run.task)
    expect(probed.video).toMatchObject({ codec: "h264", width: 1280, height: 720 })
    expect(probed.audio?.codec).toBe("aac")
    expectNothingUpstream(setup, run.task)
  })

  it("a route naming the line's i2v model: a text-only 9:16 480p task goes to the t2v model, 480*832", async () => {
    const run = await runAlibaba(
      setup,
      famW(FAMW_480, "a paper boat in the rain", { output: { aspect_ratio: "9:16" } })
    )
    expect(run.task.status).toBe("succeeded")
    expect(run.creates.map((c) => c.body)).toEqual([{
      model: "wan2.5-t2v-preview",
      input: { prompt: "a paper boat in the rain" },
      parameters: { size: "480*832", duration: 5, audio: true }
    }])
    const first = await runAlibaba(
      setup,
      famW(FAMW_480, "the boat sails off", { input: { image: { url: FIRST_FRAME } }, output: { duration: 10 } })
    )
    expect(first.task.status).toBe("succeeded")
    expect(first.creates.map((c) => c.body)).toEqual([{
      model: "wan2.5-i2v-preview",
      input: { prompt: "the boat sails off", img_url: FIRST_FRAME },
      parameters: { resolution: "480P", duration: 10, audio: true }
    }])
    expect((await download(run.task)).video).toMatchObject({ width: 480, height: 832 })
  })

  it("a silent line (wan2.2 at 1080p): 4:3 as 1632*1248, no audio field; 10 s refused at creation, nothing sent or charged", async () => {
    const run = await runAlibaba(
      setup,
      famW(FAMW_1080, "a lighthouse in a storm", { output: { aspect_ratio: "4:3", generate_audio: false } })
    )
    expect(run.task.status).toBe("succeeded")
    expect(run.creates.map((c) => c.body)).toEqual([{
      model: "wan2.2-t2v-plus",
      input: { prompt: "a lighthouse in a storm" },
      parameters: { size: "1632*1248", duration: 5 }
    }])

    const before = setup.fake.requests.length
    const acct = await createAccount(setup.gw, { name: "too long", wallet_credits: 100 })
    const tooLong = await rejection(
      api(setup.gw, acct).createVideo(
        famW(FAMW_1080, "ten seconds of storm", { output: { duration: 10, generate_audio: false } }) as any
      )
    )
    expect(tooLong).toMatchObject({ status: 400, code: "invalid_video_duration" })
    const withSound = await rejection(
      api(setup.gw, acct).createVideo(
        famW(FAMW_1080, "a storm with thunder", { output: { generate_audio: true } }) as any
      )
    )
    expect(withSound.status).toBe(400)
    expect(setup.fake.requests.length).toBe(before)
    const [{ n }] = await query<{ n: number }>(
      setup.gw,
      (sql) => sql`SELECT count(*)::int AS n FROM tasks WHERE account_id = ${acct.id}`
    )
    expect(n).toBe(0)
    expectNothingUpstream(setup, [tooLong, withSound])
  })
})

describe(`cancelling a task waiting at DashScope (${backend})`, { timeout: 90_000 }, () => {
  /** Creates a task and waits until the engine holds it waiting upstream, polled once. */
  const createWaiting = async (prompt: string) => {
    const acct = await createAccount(setup.gw, { name: prompt, wallet_credits: 100 })
    const created = await api(setup.gw, acct).createVideoReply(famW(FAMW_720, prompt) as any)
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
  const cancels = () => setup.fake.requests.filter((r) => r.method === "POST" && r.path.endsWith("/cancel"))

  it("a PENDING task: DashScope's cancel with the key; ours ends task_cancelled, refunded", async () => {
    setup.fake.lives.push({ prompt: "queued at dashscope", statuses: ["PENDING"] })
    const before = cancels().length
    const { acct, id } = await createWaiting("queued at dashscope")
    const reply = await taskApi(setup.gw, { resource: acct.resource.key }).cancelVideo(id)
    expect(reply).toMatchObject({ id, status: "failed", error: { code: "task_cancelled", retryable: false } })
    await expectRefunded(setup.gw, id)
    const [upstream] = upstreamOf("queued at dashscope")
    expect(upstream!.cancelled).toBe(true)
    expect(cancels().slice(before).map((r) => [r.path, r.headers.authorization])).toEqual([
      [`/api/v1/tasks/${upstream!.id}/cancel`, `Bearer ${KEY}`]
    ])
    expectNothingUpstream(setup, reply)
    expect((await operator(setup.gw).task(id)).attempts.at(-1)).toMatchObject({
      outcome: "cancelled",
      upstream_id: upstream!.id
    })
  })

  it("a RUNNING task: 409 task_not_cancellable, and it goes on to succeed, charged once", async () => {
    const statuses = [...Array<"RUNNING">(6).fill("RUNNING"), "SUCCEEDED" as const]
    setup.fake.lives.push({ prompt: "running at dashscope", statuses })
    const { acct, id } = await createWaiting("running at dashscope")
    const before = cancels().length
    await refused(
      taskApi(setup.gw, { resource: acct.resource.key }).cancelVideo(id),
      409,
      "task_not_cancellable",
      "conflict_error"
    )
    // DashScope was asked, and refused (UnsupportedOperation): only a PENDING task can be cancelled.
    expect(cancels().length).toBe(before + 1)
    const task = (await api(setup.gw, acct).waitTask("video", id)).at(-1)
    expect(task?.status).toBe("succeeded")
    expect(upstreamOf("running at dashscope")).toHaveLength(1)
    expect((await ledgerOf(setup.gw, id)).map((l) => l.kind)).toEqual(["charge"])
  })
})
