import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount, operator } from "../support/adminApi.ts"
import { api, rejection } from "../support/api.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import {
  CALLED,
  engineRow,
  expectChargedOnce,
  expectNothingUpstream,
  expectRefunded,
  FAMK,
  FAMS,
  FAMS_HD,
  generationsOf,
  LUMA_KEY,
  type LumaSetup,
  lumaTask,
  runLuma,
  startLumaGateway
} from "../support/luma.ts"
import { probeBytes } from "../support/media.ts"
import { taskApi } from "../support/taskApi.ts"
import { query } from "../support/tasks.ts"
import { makeImage, startMediaServer } from "../support/uploads.ts"

/**
 * The `luma` adapter against a fake of Luma's Dream Machine API speaking its
 * protocol over HTTP (docs/adapters/luma.md): per family it serves (famS,
 * famK) a text-only and a frame task, each one create with the exact body
 * Luma documents and a re-hosted MP4 that plays; what no route can take
 * refused at creation with nothing charged or sent; a cancel; callbacks.
 * Faults and the check: channel-luma-faults.test.ts; the protocol with
 * Luma's official client, and the boot's refusals: channel-luma-protocol.test.ts.
 */

let env: LumaSetup
/** Where the frames are: famS's table checks reference images, so the engine reads them before the create. */
let media: Awaited<ReturnType<typeof startMediaServer>>
beforeAll(async () => {
  const png = { body: await makeImage("png", "160x90"), type: "image/png" }
  media = await startMediaServer({ "/first.png": png, "/last.png": png })
  env = await startLumaGateway()
}, 60_000)
afterAll(async () => {
  await env?.close()
  await media?.close()
})

/** The creates a prompt caused (tasks run at once share the fake). */
const createsOf = (prompt: string) => env.fake.requests.filter((r) => r.method === "POST" && r.body?.prompt === prompt)

const downloaded = async (url: string) => probeBytes(new Uint8Array(await (await fetch(url)).arrayBuffer()))

describe(`the luma channel (${backend})`, () => {
  it("famS text only: one create with the exact body, a re-hosted MP4 that plays, the upstream id for operators", async () => {
    const { task, creates } = await runLuma(env, lumaTask(FAMS, "a lighthouse at dusk"))
    expect(task.status).toBe("succeeded")
    expect(creates).toHaveLength(1)
    const [sent] = creates
    expect(sent!.path).toBe("/dream-machine/v1/generations/video")
    expect(sent!.headers.authorization).toBe(`Bearer ${LUMA_KEY}`)
    expect(sent!.headers["content-type"]).toMatch(/^application\/json/)
    expect(sent!.body).toEqual({
      model: "ray-2",
      prompt: "a lighthouse at dusk",
      aspect_ratio: "16:9",
      resolution: "720p",
      duration: "5s"
    })
    const [generation] = generationsOf(env.fake, "a lighthouse at dusk")
    // Polled by id with the key; the video fetched from the CDN without it.
    const polls = env.fake.requests.filter((r) => r.path === `/dream-machine/v1/generations/${generation!.id}`)
    expect(polls.length).toBeGreaterThanOrEqual(1)
    expect(polls.every((p) => p.method === "GET" && p.headers.authorization === `Bearer ${LUMA_KEY}`)).toBe(true)
    const cdn = env.fake.requests.filter((r) => r.path === `/cdn/${generation!.id}/video.mp4`)
    expect(cdn.length).toBeGreaterThanOrEqual(1)
    expect(cdn.every((r) => r.headers.authorization === undefined)).toBe(true)

    const result = task.result!.videos[0]
    expect(new URL(result.url).origin).toBe(env.gw.url)
    const probed = await downloaded(result.url)
    expect(probed.formatName).toContain("mp4")
    expect(probed.video).toMatchObject({ codec: "h264", width: 1280, height: 720 })
    expect(probed.durationS).toBeGreaterThan(4.5)
    expect(result).toMatchObject({ mime_type: "video/mp4", width: 1280, height: 720, duration_ms: 5000 })
    expectNothingUpstream(env, task)
    await expectChargedOnce(env.gw, task.id)

    // Operators see the upstream id, its last answer and what Luma bills; callers never do.
    const view = await operator(env.gw).task(task.id)
    expect(view.engine).toMatchObject({ channel: "luma-dream", upstream_id: generation!.id, upstream_model: "ray-2" })
    expect(view.attempts.at(-1)).toMatchObject({
      upstream_id: generation!.id,
      outcome: "succeeded",
      billed: true,
      usage: { unit: "second", quantity: 5 }
    })
    expect(view.attempts.at(-1)?.last_answer).toMatchObject({ id: generation!.id, state: "completed" })
  })

  it("famS first and last frame, 9 s, 9:16: keyframes frame0 and frame1", async () => {
    const first = { url: `${media.url}/first.png` }
    const last = { url: `${media.url}/last.png` }
    const { task, creates } = await runLuma(
      env,
      lumaTask(FAMS, "from the first frame to the last", {
        input: { reference_mode: "frame", image: first, reference_images: [last] },
        output: { duration: 9, aspect_ratio: "9:16" }
      })
    )
    expect(task.status).toBe("succeeded")
    expect(creates.map((c) => c.body)).toEqual([{
      model: "ray-2",
      prompt: "from the first frame to the last",
      aspect_ratio: "9:16",
      resolution: "720p",
      duration: "9s",
      keyframes: { frame0: { type: "image", url: first.url }, frame1: { type: "image", url: last.url } }
    }])
    const probed = await downloaded(task.result!.videos[0].url)
    expect(probed.video).toMatchObject({ width: 720, height: 1280 })
    expect(probed.durationS).toBeGreaterThan(8.5)
    expectNothingUpstream(env, task)
  })

  it("famS first frame only: keyframes.frame0 alone", async () => {
    const image = { url: `${media.url}/first.png` }
    const { task, creates } = await runLuma(env, lumaTask(FAMS, "the first frame alone", { input: { image } }))
    expect(task.status).toBe("succeeded")
    expect(creates.map((c) => c.body)).toEqual([{
      model: "ray-2",
      prompt: "the first frame alone",
      aspect_ratio: "16:9",
      resolution: "720p",
      duration: "5s",
      keyframes: { frame0: { type: "image", url: image.url } }
    }])
    expect((await downloaded(task.result!.videos[0].url)).video).toMatchObject({ width: 1280, height: 720 })
    expectNothingUpstream(env, task)
  })

  it("famK text only and first frame: one create each, the exact bodies, both re-hosted", async () => {
    const image = { url: `${media.url}/first.png` }
    const [text, framed] = await Promise.all([
      runLuma(env, lumaTask(FAMK, "a kite over the dunes", { output: { aspect_ratio: "9:16" } })),
      runLuma(env, lumaTask(FAMK, "the first frame starts to move", { input: { image }, output: { duration: 9 } }))
    ])
    for (const run of [text!, framed!]) {
      expect(run.task.status).toBe("succeeded")
      expect(createsOf(run.task.id === text!.task.id ? "a kite over the dunes" : "the first frame starts to move"))
        .toHaveLength(1)
      const probed = await downloaded(run.task.result!.videos[0].url)
      expect(probed.formatName).toContain("mp4")
      expectNothingUpstream(env, run.task)
    }
    expect(createsOf("a kite over the dunes")[0]!.body).toEqual({
      model: "ray-flash-2",
      prompt: "a kite over the dunes",
      aspect_ratio: "9:16",
      resolution: "720p",
      duration: "5s"
    })
    expect(createsOf("the first frame starts to move")[0]!.body).toEqual({
      model: "ray-flash-2",
      prompt: "the first frame starts to move",
      aspect_ratio: "16:9",
      resolution: "720p",
      duration: "9s",
      keyframes: { frame0: { type: "image", url: image.url } }
    })
  })

  it("what no route can take is a 400 at creation: nothing charged, nothing sent", async () => {
    const before = env.fake.requests.length
    const acct = await createAccount(env.gw, { name: "luma refused", wallet_credits: 100 })
    const caller = api(env.gw, acct)
    // famS takes 4 to 15 s; Luma makes 5 or 9.
    const short = await rejection(caller.createVideo(lumaTask(FAMS, "four seconds", { output: { duration: 4 } })))
    expect(short).toMatchObject({ status: 400, code: "invalid_video_duration" })
    expect(short.message).toContain("5, 9")
    // Luma's videos are silent: a soundtrack cannot be made.
    const loud = await rejection(
      caller.createVideo(lumaTask(FAMK, "with sound", { output: { generate_audio: true } }))
    )
    expect(loud).toMatchObject({ status: 400, code: "invalid_video_parameter" })
    // The family's default (a soundtrack) is refused too, rather than silently dropped.
    const defaulted = await rejection(caller.createVideo({
      model: FAMS,
      operation: "generation",
      input: { prompt: "sound by default" },
      output: { duration: 5 }
    }))
    expect(defaulted).toMatchObject({ status: 400, code: "invalid_video_parameter" })
    for (const refusal of [short, loud, defaulted]) expectNothingUpstream(env, refusal)
    expect(env.fake.requests.length).toBe(before)
    const [row] = await query<{ tasks: number; ledger: number }>(
      env.gw,
      (sql) =>
        sql`SELECT (SELECT count(*)::int FROM tasks WHERE account_id = ${acct.id}) AS tasks,
                   (SELECT count(*)::int FROM ledger WHERE account_id = ${acct.id} AND task_id IS NOT NULL) AS ledger`
    )
    expect(row).toEqual({ tasks: 0, ledger: 0 })
  })

  it("what Luma's create has no field for (reference videos, provider options) fails before anything is sent, refunded", async () => {
    const before = env.fake.requests.filter((r) => r.method === "POST").length
    const { task } = await runLuma(env, {
      ...lumaTask(FAMS, "with a seed"),
      provider_options: { famS: { seed: 7 } }
    })
    expect(task.status).toBe("failed")
    expect(task.error).toMatchObject({ code: "invalid_provider_options", retryable: false })
    expect(env.fake.requests.filter((r) => r.method === "POST").length).toBe(before)
    expectNothingUpstream(env, task)
    await expectRefunded(env.gw, task.id)
  })

  it("cancel: a generation still queued is deleted at Luma; ours ends task_cancelled, refunded", async () => {
    const prompt = "cancel while queued at luma"
    env.fake.lives.push({ prompt, states: ["queued"] })
    const acct = await createAccount(env.gw, { name: "luma cancels", wallet_credits: 100 })
    const caller = taskApi(env.gw, acct)
    // famS 1080p, as Ray Flash 2 (never rendered: a cancel needs no video).
    const created = await caller.createVideoReply(lumaTask(FAMS_HD, prompt))
    expect(created.status).toBe(202)
    const id = created.task.id
    await eventually(async () => {
      const [row] = await query<{ run_state: string; polls: number }>(
        env.gw,
        (sql) => sql`SELECT run_state, polls FROM tasks WHERE id = ${id}`
      )
      return row !== undefined && ["waiting", "polling"].includes(row.run_state) && row.polls > 0
    }, "the task waits on Luma, read once")
    const [generation] = generationsOf(env.fake, prompt)
    expect(generation!.request).toEqual({
      model: "ray-flash-2",
      prompt,
      aspect_ratio: "16:9",
      resolution: "1080p",
      duration: "5s"
    })
    const reply = await caller.cancelVideo(id)
    expect(reply).toMatchObject({ id, status: "failed", error: { code: "task_cancelled", retryable: false } })
    await expectRefunded(env.gw, id)
    expect(generation!.deleted).toBe(true)
    const deletes = env.fake.requests.filter((r) => r.method === "DELETE")
    expect(deletes.map((d) => d.path)).toEqual([`/dream-machine/v1/generations/${generation!.id}`])
    expect(deletes[0]!.headers.authorization).toBe(`Bearer ${LUMA_KEY}`)
    expectNothingUpstream(env, reply)
    // Luma documents no refund of a deleted generation: the operator's view counts it billed.
    const view = await operator(env.gw).task(id)
    expect(view.attempts.at(-1)).toMatchObject({
      upstream_id: generation!.id,
      outcome: "cancelled",
      billed: true,
      usage: { unit: "second", quantity: 5 }
    })
  })

  it("a generation already dreaming is not cancellable: 409, and the task goes on to its video", async () => {
    const prompt = "too late to cancel"
    env.fake.lives.push({ prompt, states: ["queued", "dreaming", "dreaming", "dreaming", "completed"], stepMs: 300 })
    const acct = await createAccount(env.gw, { name: "luma late cancel", wallet_credits: 100 })
    const caller = taskApi(env.gw, acct)
    const created = await caller.createVideoReply(lumaTask(FAMS, prompt))
    const [generation] = await eventually(() => {
      const found = generationsOf(env.fake, prompt)
      return found.length > 0 && env.fake.stateOf(found[0]!) === "dreaming" ? found : undefined
    }, "the generation dreams")
    const refusal = await rejection(caller.cancelVideo(created.task.id))
    expect(refusal).toMatchObject({ status: 409, code: "task_not_cancellable" })
    const seen = await caller.waitTask("video", created.task.id)
    expect(seen.at(-1)!.status).toBe("succeeded")
    expect(generation!.deleted).toBe(false)
  })

  it("callbacks: the create carries callback_url; Luma's posts are taken (2xx) and only hasten the poll", async () => {
    const { task, creates } = await runLuma(env, lumaTask(CALLED, "called back"))
    expect(task.status).toBe("succeeded")
    const url = creates[0]!.body.callback_url as string
    expect(url).toMatch(new RegExp(`^${env.gw.url}/v1/upstream-callbacks/[A-Za-z0-9_-]+$`))
    expect(creates[0]!.body).toMatchObject({ model: "ray-2", resolution: "720p", duration: "5s" })
    const [generation] = generationsOf(env.fake, "called back")
    await eventually(() => generation!.callbacks.some((c) => c.state === "completed"), "the completed callback")
    expect(generation!.callbacks.every((c) => c.status >= 200 && c.status <= 299)).toBe(true)
    expect(generation!.callbacks.map((c) => c.state)).toEqual(expect.arrayContaining(["dreaming", "completed"]))
    // Not a generation object: refused, nothing polled; a lying one names a generation, the poll decides.
    const forged = await fetch(url, { method: "POST", body: JSON.stringify({ hello: "world" }) })
    expect(forged.status).toBe(400)
    const lying = await fetch(url, {
      method: "POST",
      body: JSON.stringify({ id: generation!.id, state: "failed", failure_reason: "made up" })
    })
    expect(lying.status).toBe(204)
    const [row] = await query<{ status: string }>(env.gw, (sql) => sql`SELECT status FROM tasks WHERE id = ${task.id}`)
    expect(row!.status).toBe("succeeded")
    expect((await engineRow(env.gw, task.id)).channel).toBe("luma-called")
  })
})
