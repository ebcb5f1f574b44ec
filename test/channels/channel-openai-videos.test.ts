import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { operator } from "../support/adminApi.ts"
import { backend } from "../support/database.ts"
import { probeBytes } from "../support/media.ts"
import {
  DOWN,
  expectNothingUpstream,
  expectRefunded,
  KEY,
  runTask,
  SHORT,
  startVideosGateway,
  type VideosGateway,
  videoTask
} from "../support/openaiVideos.ts"

/**
 * The `openai-videos` adapter against a fake OpenAI Videos API speaking the
 * protocol over HTTP (docs/adapters/openai-videos.md): the request mapping, the
 * results, relay statuses, upstream failures, expired content, the deadline.
 * Transport faults and refusals: channel-openai-videos-faults.test.ts.
 */

let env: VideosGateway
beforeAll(async () => {
  env = await startVideosGateway()
})
afterAll(async () => {
  await env?.close()
})
const run = (body: ReturnType<typeof videoTask>) => runTask(env, body)

describe(`the openai-videos channel (${backend})`, () => {
  it("runs a text-to-video task: the exact create, a re-hosted MP4 that plays, the upstream id for operators", async () => {
    const { task, creates, polls, video } = await run(
      videoTask("a lighthouse at dusk", { output: { duration: 8, aspect_ratio: "16:9" } })
    )
    expect(task.status).toBe("succeeded")
    expect(creates).toHaveLength(1)
    const [sent] = creates
    expect(sent!.path).toBe("/v1/videos")
    expect(sent!.headers.authorization).toBe(`Bearer ${KEY}`)
    expect(sent!.headers["content-type"]).toMatch(/^application\/json/)
    expect(sent!.fields).toEqual({ model: "sora-2", prompt: "a lighthouse at dusk", seconds: "8", size: "1280x720" })
    expect(polls.length).toBeGreaterThanOrEqual(3)
    expect(polls.every((p) => p.method === "GET" && p.headers.authorization === `Bearer ${KEY}`)).toBe(true)
    const download = env.fake.requests.find((r) => r.path === `/v1/videos/${video!.id}/content`)
    expect(download?.headers.accept).toBe("application/binary")

    const result = task.result!.videos[0]
    expect(new URL(result.url).origin).toBe(env.gw.url)
    const probed = await probeBytes(new Uint8Array(await (await fetch(result.url)).arrayBuffer()))
    expect(probed.formatName).toContain("mp4")
    expect(probed.video).toMatchObject({ codec: "h264", width: 1280, height: 720 })
    expect(probed.audio?.codec).toBe("aac")
    expect(probed.durationS).toBeGreaterThan(7.5)
    expect(result).toMatchObject({ mime_type: "video/mp4", width: 1280, height: 720, duration_ms: 8000 })
    expectNothingUpstream(env, task)

    // Operators see the upstream id and its last answer; callers never do.
    // A 200: the typed admin client decodes the contract's answer or fails.
    const view = await operator(env.gw).task(task.id)
    expect(view.engine).toMatchObject({ channel: "ovideos", upstream_id: video!.id, upstream_model: "sora-2" })
    expect(view.attempts.at(-1)).toMatchObject({ upstream_id: video!.id, outcome: "succeeded" })
    expect(view.attempts.at(-1)?.last_answer).toMatchObject({ id: video!.id, status: "completed" })
  })

  it("sends a first frame as input_reference, and 9:16 as 720x1280", async () => {
    const image = { url: "http://127.0.0.1:9/first-frame.png" }
    const { task, creates } = await run(
      videoTask("the first frame comes alive", { input: { image }, output: { aspect_ratio: "9:16" } })
    )
    expect(task.status).toBe("succeeded")
    expect(creates.map((c) => c.fields)).toEqual([{
      model: "sora-2",
      prompt: "the first frame comes alive",
      seconds: "4",
      size: "720x1280",
      input_reference: { image_url: image.url }
    }])
  })

  it("reads relay statuses: done, succeeded, a missing status, unknown and unheard-of words", async () => {
    const lives = {
      "relay done": [null, "unknown", "done"],
      "relay succeeded": ["NOT_START", "running", "succeeded"],
      "relay shouting": ["unknown", "warming-up", "COMPLETED"]
    }
    for (const [prompt, statuses] of Object.entries(lives)) env.fake.lives.push({ prompt, statuses })
    const runs = await Promise.all(Object.keys(lives).map((prompt) => run(videoTask(prompt))))
    for (const { creates, polls, task } of runs) {
      expect(task.status).toBe("succeeded")
      expect(creates).toHaveLength(1)
      expect(polls.length).toBeGreaterThanOrEqual(3)
      expectNothingUpstream(env, task)
    }
  })

  it("an unknown status forever fails at the channel's deadline: retryable, refunded", async () => {
    env.fake.lives.push({ prompt: "never tells", statuses: ["unknown"] })
    const started = Date.now()
    const { polls, task } = await run(videoTask("never tells", { model: SHORT, output: { duration: 8 } }))
    expect(Date.now() - started).toBeGreaterThanOrEqual(3000)
    expect(polls.length).toBeGreaterThanOrEqual(2)
    expect(task.status).toBe("failed")
    expect(task.error).toMatchObject({ code: "video_task_failed", retryable: true })
    await expectRefunded(env.gw, task.id)
  })

  it("an upstream failure fails the task with a truthful retryable; a content-policy refusal is final", async () => {
    env.fake.lives.push(
      {
        prompt: "refused prompt",
        statuses: ["in_progress", "failed"],
        error: { code: "moderation_blocked", message: "Your prompt was flagged by our safety system." }
      },
      { prompt: "broken run", statuses: ["error"], error: { code: "internal_error", message: "GPU fell over" } },
      { prompt: "cancelled run", statuses: ["queued", "cancelled"] }
    )
    const [refused, broken, cancelled] = await Promise.all(
      ["refused prompt", "broken run", "cancelled run"].map((prompt) => run(videoTask(prompt)))
    )
    expect(refused!.task.error).toMatchObject({ code: "video_task_failed", retryable: false })
    expect(refused!.task.error?.message).toMatch(/content policy/)
    expect(broken!.task.error).toMatchObject({ code: "video_task_failed", retryable: true })
    expect(cancelled!.task.error).toMatchObject({ code: "video_task_failed", retryable: true })
    for (const { creates, task } of [refused!, broken!, cancelled!]) {
      expect(task.status).toBe("failed")
      expect(creates).toHaveLength(1)
      expectNothingUpstream(env, task)
      await expectRefunded(env.gw, task.id)
    }
  })

  it("expired content (404 or 410 on /content) fails the task with its refund", async () => {
    env.fake.lives.push(
      { prompt: "gone 404", statuses: ["completed"], expired: 404 },
      { prompt: "gone 410", statuses: ["completed"], expired: 410 }
    )
    for (const { task } of await Promise.all(["gone 404", "gone 410"].map((p) => run(videoTask(p))))) {
      expect(task.status).toBe("failed")
      expect(task.error).toEqual({
        code: "video_task_failed",
        message: "The generated video expired before it could be stored.",
        retryable: true
      })
      expectNothingUpstream(env, task)
      await expectRefunded(env.gw, task.id)
    }
  })

  it("a channel that refuses connections: retried, then failed retryable with its refund", async () => {
    const before = env.fake.requests.length
    const { task } = await run(videoTask("nobody home", { model: DOWN }))
    expect(task.status).toBe("failed")
    expect(task.error).toMatchObject({ code: "video_task_failed", retryable: true })
    expect(env.fake.requests.length).toBe(before)
    expectNothingUpstream(env, task)
    await expectRefunded(env.gw, task.id)
  })
})
