import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { adminApi, createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { errorOf, raw } from "../support/http.ts"
import { probeBytes } from "../support/media.ts"
import {
  engineRow,
  expectChargedOnce,
  expectNothingUpstream,
  hailuoTask,
  KEY,
  M1080,
  M768,
  type MinimaxSetup,
  runMinimax,
  startMinimaxGateway
} from "../support/minimax.ts"
import { refused, taskApi } from "../support/taskApi.ts"
import { query } from "../support/tasks.ts"

/**
 * The `minimax` adapter against a fake MiniMax API speaking the protocol
 * over HTTP (docs/adapters/minimax.md): famH text-to-video, first frame and
 * first-and-last frame, each the exact create MiniMax documents and one
 * upstream task; the result fetched through the files API and re-hosted; what
 * a route's MiniMax model cannot take refused at creation; no cancel; the
 * channel check. Faults and refusals: channel-minimax-faults.test.ts.
 */

let env: MinimaxSetup
beforeAll(async () => {
  env = await startMinimaxGateway()
}, 120_000)
afterAll(async () => {
  await env?.close()
})

const run = (body: Record<string, unknown>) => runMinimax(env, body)
const FIRST = { url: "http://127.0.0.1:9/first-frame.png" }
const LAST = { url: "http://127.0.0.1:9/last-frame.png" }

/** The re-hosted result, downloaded from the gateway and probed. */
const probed = async (task: { result: { videos: ReadonlyArray<{ url: string }> } | null }) => {
  const url = task.result!.videos[0]!.url
  expect(new URL(url).origin).toBe(env.gw.url)
  return probeBytes(new Uint8Array(await (await fetch(url)).arrayBuffer()))
}

describe(`the minimax channel (${backend})`, () => {
  it("famH 768p text-to-video: the exact create, one task, polled, retrieved, a re-hosted silent MP4", async () => {
    const { task, creates, requests } = await run(hailuoTask(M768, "a paper boat on a river"))
    expect(task.status).toBe("succeeded")
    expect(creates).toHaveLength(1)
    const [sent] = creates
    expect(sent!.path).toBe("/v1/video_generation")
    expect(sent!.headers.authorization).toBe(`Bearer ${KEY}`)
    expect(sent!.headers["content-type"]).toMatch(/^application\/json/)
    expect(sent!.body).toEqual({
      model: "MiniMax-Hailuo-02",
      prompt: "a paper boat on a river",
      duration: 6,
      resolution: "768P"
    })
    const upstream = [...env.fake.tasks.values()].filter((t) => t.body.prompt === "a paper boat on a river")
    expect(upstream).toHaveLength(1)
    const polls = requests.filter((r) => r.path === "/v1/query/video_generation")
    expect(polls.length).toBeGreaterThanOrEqual(3)
    expect(polls.every((p) => p.query.get("task_id") === upstream[0]!.id)).toBe(true)
    expect(polls.every((p) => p.headers.authorization === `Bearer ${KEY}`)).toBe(true)
    const retrieve = requests.find((r) => r.path === "/v1/files/retrieve")
    expect(retrieve?.query.get("file_id")).toBe(upstream[0]!.fileId)
    expect(retrieve?.headers.authorization).toBe(`Bearer ${KEY}`)
    // The storage link is signed by MiniMax: the key never goes there.
    const download = requests.find((r) => r.path.startsWith("/download/"))
    expect(download?.headers.authorization).toBeUndefined()

    const media = await probed(task)
    expect(media.formatName).toContain("mp4")
    expect(media.video).toMatchObject({ codec: "h264", width: 1366, height: 768 })
    expect(media.audio).toBeUndefined()
    expect(media.durationS).toBeGreaterThan(5.5)
    expectNothingUpstream(env, task)
    await expectChargedOnce(env.gw, task.id)

    // Operators see the upstream id and its last answer; callers never do.
    const view = await operator(env.gw).task(task.id)
    expect(view.engine).toMatchObject({ channel: "hailuo", upstream_id: upstream[0]!.id })
    expect(view.attempts.at(-1)).toMatchObject({ upstream_id: upstream[0]!.id, outcome: "succeeded" })
    expect(view.attempts.at(-1)?.last_answer).toMatchObject({ status: "Success", file_id: upstream[0]!.fileId })
  }, 90_000)

  it("famH 768p first frame, 10 s, the famH options: first_frame_image and MiniMax's flags", async () => {
    const { task, creates } = await run({
      ...hailuoTask(M768, "the frame comes alive", { image: FIRST }, { duration: 10 }),
      provider_options: { famH: { prompt_optimizer: false, fast_pretreatment: true } }
    })
    expect(task.status).toBe("succeeded")
    expect(creates.map((c) => c.body)).toEqual([{
      model: "MiniMax-Hailuo-02",
      prompt: "the frame comes alive",
      duration: 10,
      resolution: "768P",
      first_frame_image: FIRST.url,
      prompt_optimizer: false,
      fast_pretreatment: true
    }])
    const media = await probed(task)
    expect(media.durationS).toBeGreaterThan(9.5)
    expectNothingUpstream(env, task)
  }, 90_000)

  it("famH 768p first and last frame on MiniMax-Hailuo-02: first_frame_image and last_frame_image", async () => {
    const { task, creates } = await run(
      hailuoTask(M768, "from dawn to dusk", { image: FIRST, reference_images: [LAST] })
    )
    expect(task.status).toBe("succeeded")
    expect(creates.map((c) => c.body)).toEqual([{
      model: "MiniMax-Hailuo-02",
      prompt: "from dawn to dusk",
      duration: 6,
      resolution: "768P",
      first_frame_image: FIRST.url,
      last_frame_image: LAST.url
    }])
    expectNothingUpstream(env, task)
  }, 90_000)

  it("famH 1080p on MiniMax-Hailuo-2.3: text-only and a first frame, 1080P, one task each, 1920x1080", async () => {
    const [text, frame] = await Promise.all([
      run(hailuoTask(M1080, "a city at night in full HD")),
      run(hailuoTask(M1080, "a portrait turns its head", { image: FIRST }))
    ])
    // Run at once, so each task's creates are told apart by their prompt.
    const createsOf = (prompt: string) =>
      env.fake.requests.filter((r) => r.method === "POST" && r.body.prompt === prompt).map((r) => r.body)
    expect(createsOf("a city at night in full HD")).toEqual([{
      model: "MiniMax-Hailuo-2.3",
      prompt: "a city at night in full HD",
      duration: 6,
      resolution: "1080P"
    }])
    expect(createsOf("a portrait turns its head")).toEqual([{
      model: "MiniMax-Hailuo-2.3",
      prompt: "a portrait turns its head",
      duration: 6,
      resolution: "1080P",
      first_frame_image: FIRST.url
    }])
    for (const { task } of [text!, frame!]) {
      expect(task.status).toBe("succeeded")
      expect((await probed(task)).video).toMatchObject({ codec: "h264", width: 1920, height: 1080 })
      expect(await engineRow(env.gw, task.id)).toMatchObject({ channel: "hailuo23" })
      expectNothingUpstream(env, task)
    }
  }, 90_000)

  it("what the route's MiniMax model cannot take: 400 at creation, nothing charged, created or sent", async () => {
    const cases: Array<[Record<string, unknown>, RegExp]> = [
      // MiniMax-Hailuo-2.3 takes no last frame (the adapter's table).
      [hailuoTask(M1080, "two frames on 2.3", { image: FIRST, reference_images: [LAST] }), /last frame/i],
      // Hailuo's videos are silent.
      [hailuoTask(M768, "with a soundtrack", {}, { generate_audio: true }), /generate_audio/],
      // 1080P is 6 s only.
      [hailuoTask(M1080, "ten seconds of full HD", {}, { duration: 10 }), /duration/]
    ]
    for (const [json, message] of cases) {
      const acct = await createAccount(env.gw, { name: "refused", wallet_credits: 100 })
      const sent = env.fake.requests.length
      const reply = await raw(env.gw, "POST", "/v1/video/tasks", { key: acct.model.key, json })
      expect(reply.status).toBe(400)
      expect(errorOf(reply.body)?.type).toBe("invalid_request_error")
      expect(String(errorOf(reply.body)?.message)).toMatch(message)
      expect(JSON.stringify(reply.body)).not.toMatch(/minimax|hailuo/i)
      expect((await operator(env.gw).account(acct.id)).wallet_credits).toBe(100)
      const [row] = await query<{ n: number }>(
        env.gw,
        (sql) => sql`SELECT count(*)::int AS n FROM tasks WHERE account_id = ${acct.id}`
      )
      expect(row!.n).toBe(0)
      expect(env.fake.requests.length).toBe(sent)
    }
  }, 90_000)

  it("no cancel in MiniMax's API: 409 task_not_cancellable, nothing but reads sent, the task succeeds", async () => {
    env.fake.lives.push({
      prompt: "too late to stop",
      statuses: ["Queueing", "Processing", "Processing", "Processing", "Success"]
    })
    const acct = await createAccount(env.gw, { name: "canceller", wallet_credits: 100 })
    const created = await api(env.gw, acct).createVideoReply(hailuoTask(M768, "too late to stop") as any)
    expect(created.status).toBe(202)
    const id = created.task.id
    await eventually(async () => {
      const [row] = await query<{ run_state: string; polls: number }>(
        env.gw,
        (sql) => sql`SELECT run_state, polls FROM tasks WHERE id = ${id}`
      )
      return row !== undefined && ["waiting", "polling"].includes(row.run_state) && row.polls > 0 || undefined
    }, "the task waits upstream, polled once")
    const before = env.fake.requests.length
    const reply = await refused(
      taskApi(env.gw, { resource: acct.resource.key }).cancelVideo(id),
      409,
      "task_not_cancellable",
      "conflict_error"
    )
    expect(reply.message).not.toMatch(/minimax|hailuo/i)
    expect(env.fake.requests.slice(before).filter((r) => r.method !== "GET")).toEqual([])
    const task = (await api(env.gw, acct).waitTask("video", id)).at(-1)
    expect(task?.status).toBe("succeeded")
    expect([...env.fake.tasks.values()].filter((t) => t.body.prompt === "too late to stop")).toHaveLength(1)
    await expectChargedOnce(env.gw, id)
  }, 90_000)

  it("the channel check: ok with the key, credentials_refused with another, unreachable, unexpected_answer", async () => {
    const check = (name: string) => adminApi(env.gw)((c) => c.adminChannels.checkChannel({ path: { name } }))
    const creates = () => env.fake.requests.filter((r) => r.method === "POST").length
    const before = creates()
    const expected = {
      hailuo: { ok: true, result: "ok" },
      "hailuo-wrong": { ok: false, result: "credentials_refused" },
      "hailuo-down": { ok: false, result: "unreachable" },
      "hailuo-garbage": { ok: false, result: "unexpected_answer" }
    }
    for (const [name, answer] of Object.entries(expected)) {
      const reply = await check(name)
      expect(reply, `${name}: ${reply.detail}`).toMatchObject(answer)
      expect(reply.detail).not.toContain(KEY)
      expect(reply.detail).not.toContain("a-key-of-another-account")
    }
    const lists = env.fake.requests.filter((r) => r.path === "/v1/files/list")
    expect(lists.map((r) => r.query.get("purpose"))).toEqual(["t2a_async_input", "t2a_async_input"])
    expect(creates()).toBe(before)
  })
})
