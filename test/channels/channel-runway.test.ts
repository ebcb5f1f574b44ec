import RunwayML from "@runwayml/sdk"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import runwayAdapter, { RUNWAY_BASE_URL } from "../../channels/runway/index.ts"
import { adminApi, createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { errorOf, raw } from "../support/http.ts"
import { probeBytes } from "../support/media.ts"
import {
  createsOf,
  engineRow,
  expectNothingUpstream,
  expectRefunded,
  FAMK,
  FAMK_FRAMED,
  FAMV,
  FAMV_HD,
  KEY,
  runRunway,
  type RunwaySetup,
  startRunwayGateway,
  tasksOf,
  video,
  WRONG_KEY
} from "../support/runway.ts"
import { taskApi } from "../support/taskApi.ts"
import { query } from "../support/tasks.ts"
import { makeImage, startMediaServer } from "../support/uploads.ts"

/**
 * The `runway` adapter against a fake of Runway's developer API speaking its
 * protocol over HTTP (docs/adapters/runway.md): per family a text-only and a
 * first-frame task with the exact create Runway documents, the result
 * re-hosted; what no route takes refused at creation; a cancel; the check;
 * and Runway's own SDK driving the fake. Faults: channel-runway-faults.test.ts.
 */

let r: RunwaySetup
let media: Awaited<ReturnType<typeof startMediaServer>>
let png: Uint8Array

beforeAll(async () => {
  png = await makeImage("png")
  media = await startMediaServer({ "/first.png": { body: png, type: "image/png" } })
  r = await startRunwayGateway()
}, 60_000)
afterAll(async () => {
  await r?.close()
  await media?.close()
})

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")

/** The result, downloaded from the gateway (never Runway's link), probed. */
const download = async (task: any) => {
  const result = task.result.videos[0]
  expect(new URL(result.url).origin).toBe(r.gw.url)
  return probeBytes(new Uint8Array(await (await fetch(result.url)).arrayBuffer()))
}

/** The headers every Runway request of the channel carries. */
const expectSigned = (request: { headers: Record<string, unknown> }) => {
  expect(request.headers.authorization).toBe(`Bearer ${KEY}`)
  expect(request.headers["x-runway-version"]).toBe("2024-11-06")
}

describe(`the runway channel: requests and results (${backend})`, () => {
  it("famK text only goes to gen4.5: the exact text_to_video create, a silent MP4 re-hosted, ids for operators only", async () => {
    const prompt = "a paper boat on a rainy street"
    const { task } = await runRunway(r, video(FAMK, { prompt }, { duration: 5, generate_audio: false }))
    expect(task.status).toBe("succeeded")
    const creates = createsOf(r, prompt)
    expect(creates).toHaveLength(1)
    expect(creates[0]!.path).toBe("/v1/text_to_video")
    expectSigned(creates[0]!)
    expect(creates[0]!.headers["content-type"]).toMatch(/^application\/json/)
    expect(creates[0]!.body).toEqual({ model: "gen4.5", promptText: prompt, ratio: "1280:720", duration: 5 })
    const [upstream] = tasksOf(r, prompt)
    const reads = r.fake.requests.filter((q) => q.path === `/v1/tasks/${upstream!.id}`)
    expect(reads.length).toBeGreaterThanOrEqual(3)
    for (const read of reads) expectSigned(read)
    // The output link is Runway's signed URL: fetched without the key.
    const fetched = r.fake.requests.filter((q) => q.path === `/outputs/${upstream!.id}.mp4`)
    expect(fetched.length).toBeGreaterThanOrEqual(1)
    expect(fetched.every((q) => q.headers.authorization === undefined)).toBe(true)

    const probed = await download(task)
    expect(probed.formatName).toContain("mp4")
    expect(probed.video).toMatchObject({ codec: "h264", width: 1280, height: 720 })
    expect(probed.audio).toBeUndefined()
    expect(probed.durationS).toBeGreaterThan(4.8)
    expect(task.result!.videos[0]).toMatchObject({ mime_type: "video/mp4", width: 1280, height: 720 })
    expectNothingUpstream(r, task)

    const view = await operator(r.gw).task(task.id)
    expect(view.attempts.at(-1)).toMatchObject({ channel: "runway", upstream_id: upstream!.id, outcome: "succeeded" })
    expect(view.attempts.at(-1)?.last_answer).toMatchObject({ id: upstream!.id, status: "SUCCEEDED" })
    expect((await engineRow(r.gw, task.id)).upstream_id).toBe(upstream!.id)
  })

  it("famK first frame goes to gen4_turbo: image_to_video with the frame read and sent as a data URI", async () => {
    const prompt = "the kite rises over the dunes"
    const { task } = await runRunway(
      r,
      video(FAMK, { prompt, image: { url: `${media.url}/first.png` } }, {
        duration: 10,
        aspect_ratio: "9:16",
        generate_audio: false
      })
    )
    expect(task.status).toBe("succeeded")
    const creates = createsOf(r, prompt)
    expect(creates).toHaveLength(1)
    expect(creates[0]!.path).toBe("/v1/image_to_video")
    expectSigned(creates[0]!)
    expect(creates[0]!.body).toEqual({
      model: "gen4_turbo",
      promptText: prompt,
      promptImage: `data:image/png;base64,${b64(png)}`,
      ratio: "720:1280",
      duration: 10
    })
    const probed = await download(task)
    expect(probed.video).toMatchObject({ width: 720, height: 1280 })
    expect(probed.durationS).toBeGreaterThan(9.5)
    expectNothingUpstream(r, task)
    expect((await operator(r.gw).task(task.id)).attempts.at(-1)).toMatchObject({ channel: "runway-turbo" })
  })

  it("famV text only on veo3.1_fast: text_to_video with the audio switch; the MP4 has its soundtrack", async () => {
    const prompt = "a brass band marching at noon"
    const { task } = await runRunway(r, video(FAMV, { prompt }, { duration: 8 }))
    expect(task.status).toBe("succeeded")
    const creates = createsOf(r, prompt)
    expect(creates.map((c) => [c.path, c.body])).toEqual([[
      "/v1/text_to_video",
      { model: "veo3.1_fast", promptText: prompt, ratio: "1280:720", duration: 8, audio: true }
    ]])
    const probed = await download(task)
    expect(probed.video).toMatchObject({ width: 1280, height: 720 })
    expect(probed.audio?.codec).toBe("aac")
    expect(probed.durationS).toBeGreaterThan(7.5)
    expectNothingUpstream(r, task)
  })

  it("famV first and last frame on veo3.1 at 1080p: promptImage with positions, HTTPS URLs as they are, options", async () => {
    const prompt = "from dawn to dusk over the bay"
    const [first, last] = ["https://images.example.com/dawn.png", "https://images.example.com/dusk.png"]
    const { task } = await runRunway(
      r,
      video(FAMV_HD, { prompt, image: { url: first }, reference_images: [{ url: last }] }, {
        duration: 4,
        generate_audio: false
      }, { provider_options: { famV: { seed: 7, negative_prompt: "fog" } } })
    )
    expect(task.status).toBe("succeeded")
    expect(createsOf(r, prompt).map((c) => [c.path, c.body])).toEqual([[
      "/v1/image_to_video",
      {
        model: "veo3.1",
        promptText: prompt,
        promptImage: [{ uri: first, position: "first" }, { uri: last, position: "last" }],
        ratio: "1920:1080",
        duration: 4,
        audio: false,
        seed: 7,
        negativePrompt: "fog"
      }
    ]])
    const probed = await download(task)
    expect(probed.video).toMatchObject({ width: 1920, height: 1080 })
    expect(probed.audio).toBeUndefined()
    expectNothingUpstream(r, task)
  })

  it("what no route takes is a 400 at creation: nothing charged, no task, nothing sent to Runway", async () => {
    const acct = await createAccount(r.gw, { name: "runway refusals", wallet_credits: 100 })
    const before = r.fake.requests.length
    const create = (json: unknown) => raw(r.gw, "POST", "/v1/video/tasks", { key: acct.model.key, json })
    const frame = { url: `${media.url}/first.png` }
    const cases = [
      // gen4_turbo takes 5 or 10 s, gen4.5 2 to 10 s: 12 s (famK takes 3 to 15) has no route.
      [video(FAMK, { prompt: "too long" }, { duration: 12, generate_audio: false }), "invalid_video_duration", /5, 10/],
      // Text only to a model whose only route needs a first frame (gen4_turbo).
      [
        video(FAMK_FRAMED, { prompt: "no frame" }, { duration: 5, generate_audio: false }),
        "invalid_video_parameter",
        /first frame .*is required/
      ],
      // Gen-4 videos are silent: famK's default soundtrack is refused.
      [
        video(FAMK, { prompt: "with sound", image: frame }, { duration: 5 }),
        "invalid_video_parameter",
        /generate_audio/
      ],
      // gen4_turbo takes no last frame.
      [
        video(FAMK, { prompt: "two frames", image: frame, reference_images: [frame] }, {
          duration: 5,
          generate_audio: false
        }),
        "invalid_",
        /./
      ]
    ] as const
    for (const [body, code, words] of cases) {
      const reply = await create(body)
      expect(reply.status, JSON.stringify(reply.body)).toBe(400)
      expect(String(errorOf(reply.body)?.code)).toContain(code)
      expect(String(errorOf(reply.body)?.message)).toMatch(words)
      expectNothingUpstream(r, reply.body)
    }
    expect((await operator(r.gw).account(acct.id)).wallet_credits).toBe(100)
    const [{ n }] = await query<{ n: number }>(
      r.gw,
      (sql) => sql`SELECT count(*)::int AS n FROM tasks WHERE account_id = ${acct.id}`
    )
    expect(n).toBe(0)
    expect(r.fake.requests.length).toBe(before)
  })

  it("a task failed upstream: a safety refusal is final, a bad output retryable; both refunded", async () => {
    r.fake.lives.push(
      {
        prompt: "refused by moderation",
        statuses: ["RUNNING", "FAILED"],
        failure: "SAFETY.INPUT.TEXT: the prompt was rejected",
        failureCode: "SAFETY.INPUT.TEXT"
      },
      { prompt: "bad output", statuses: ["FAILED"], failure: "bad output", failureCode: "INTERNAL.BAD_OUTPUT.CODE01" }
    )
    const [safety, bad] = await Promise.all(
      ["refused by moderation", "bad output"].map((prompt) => runRunway(r, video(FAMV, { prompt }, { duration: 4 })))
    )
    expect(safety!.task.error).toMatchObject({ code: "video_task_failed", retryable: false })
    expect(safety!.task.error?.message).toMatch(/content safety/)
    expect(bad!.task.error).toMatchObject({ code: "video_task_failed", retryable: true })
    for (const [prompt, { task }] of [["refused by moderation", safety!], ["bad output", bad!]] as const) {
      expect(task.status).toBe("failed")
      expect(tasksOf(r, prompt)).toHaveLength(1)
      expectNothingUpstream(r, task)
      await expectRefunded(r.gw, task.id)
    }
  })
})

describe(`cancelling a task waiting at Runway (${backend})`, () => {
  const createWaiting = async (prompt: string) => {
    const acct = await createAccount(r.gw, { name: prompt, wallet_credits: 100 })
    const created = await api(r.gw, acct).createVideoReply(video(FAMV, { prompt }, { duration: 4 }) as any)
    expect(created.status).toBe(202)
    const id = created.task.id
    await eventually(async () => {
      const [row] = await query<{ run_state: string; polls: number }>(
        r.gw,
        (sql) => sql`SELECT run_state, polls FROM tasks WHERE id = ${id}`
      )
      return row !== undefined && ["waiting", "polling"].includes(row.run_state) && row.polls > 0
    }, "the task waits at Runway, read once")
    return { acct, id }
  }
  const deletes = () => r.fake.requests.filter((q) => q.method === "DELETE")

  it("a RUNNING task: DELETE /v1/tasks/{id} with the key; ours ends task_cancelled, refunded", async () => {
    r.fake.lives.push({ prompt: "running at runway", statuses: ["RUNNING"] })
    const before = deletes().length
    const { acct, id } = await createWaiting("running at runway")
    const reply = await taskApi(r.gw, { resource: acct.resource.key }).cancelVideo(id)
    expect(reply).toMatchObject({ id, status: "failed", error: { code: "task_cancelled", retryable: false } })
    await expectRefunded(r.gw, id)
    const [upstream] = tasksOf(r, "running at runway")
    expect(upstream!.cancelled).toBe(true)
    expect(upstream!.deleted).toBe(false)
    const sent = deletes().slice(before)
    expect(sent.map((q) => q.path)).toEqual([`/v1/tasks/${upstream!.id}`])
    expectSigned(sent[0]!)
    expectNothingUpstream(r, reply)
    expect((await operator(r.gw).task(id)).attempts.at(-1)).toMatchObject({
      outcome: "cancelled",
      upstream_id: upstream!.id
    })
  })
})

describe(`the runway channel's check and its route table (${backend})`, () => {
  const check = (name: string) => adminApi(r.gw)((c) => c.adminChannels.checkChannel({ path: { name } }))

  it("GET /v1/organization: ok with the key, credentials_refused with another, unreachable, unexpected_answer", async () => {
    const before = r.fake.tasks.size
    expect(await check("runway")).toMatchObject({ ok: true, result: "ok", detail: "GET /v1/organization: HTTP 200" })
    const wrong = await check("runway-wrong")
    expect(wrong).toMatchObject({ ok: false, result: "credentials_refused" })
    expect(wrong.detail).not.toContain(WRONG_KEY)
    expect(await check("runway-down")).toMatchObject({ ok: false, result: "unreachable" })
    expect(await check("runway-garbage")).toMatchObject({ ok: false, result: "unexpected_answer" })
    const asked = r.fake.requests.filter((q) => q.path === "/v1/organization")
    expect(asked.map((q) => q.headers.authorization)).toEqual([`Bearer ${KEY}`, `Bearer ${WRONG_KEY}`])
    expect(asked.every((q) => q.headers["x-runway-version"] === "2024-11-06")).toBe(true)
    expect(r.fake.tasks.size).toBe(before)
  })

  it("checkRoute knows its Runway models; routeLimits gives each one's durations, ratios, soundtrack and frames", () => {
    const channel = { name: "runway", settings: {} } as any
    const route = (upstreamModel: string) => ({ model: FAMK, family: "famK", kind: "video" as const, upstreamModel })
    expect(runwayAdapter.checkRoute!(channel, route("gen4_turbo"))).toBeUndefined()
    expect(runwayAdapter.checkRoute!(channel, route("gen3a_turbo"))).toMatch(
      /does not know .*gen4_turbo, gen4\.5, veo3\.1, veo3\.1_fast/
    )
    expect(runwayAdapter.routeLimits!(channel, route("gen4_turbo"))).toEqual({
      durations: [5, 10],
      aspectRatios: ["16:9", "9:16", "4:3", "3:4", "1:1", "21:9"],
      resolutions: ["720p"],
      audio: "never",
      lastFrame: false,
      firstFrame: "required"
    })
    expect(runwayAdapter.routeLimits!(channel, route("gen4.5"))).not.toHaveProperty("firstFrame")
    expect(runwayAdapter.routeLimits!(channel, route("gen4.5"))).toMatchObject({
      durations: [2, 3, 4, 5, 6, 7, 8, 9, 10],
      aspectRatios: ["16:9", "9:16"],
      resolutions: ["720p"],
      audio: "never"
    })
    expect(runwayAdapter.routeLimits!(channel, route("veo3.1_fast"))).toEqual({
      durations: [4, 6, 8],
      aspectRatios: ["16:9", "9:16"],
      resolutions: ["720p", "1080p"],
      lastFrame: true
    })
    expect(RUNWAY_BASE_URL).toBe("https://api.dev.runwayml.com")
  })
})

describe(`Runway's own SDK against the fake (${backend})`, () => {
  it("@runwayml/sdk creates an image_to_video task, reads it to SUCCEEDED, and cancels another", async () => {
    const client = new RunwayML({ apiKey: KEY, baseURL: r.fake.url, maxRetries: 0 })
    const created = await client.imageToVideo.create({
      model: "gen4_turbo",
      promptImage: "https://images.example.com/first.png",
      promptText: "sdk: a lantern swings",
      ratio: "1280:720",
      duration: 5
    })
    expect(typeof created.id).toBe("string")
    let task = await client.tasks.retrieve(created.id)
    while (task.status !== "SUCCEEDED" && task.status !== "FAILED") task = await client.tasks.retrieve(created.id)
    expect(task.status).toBe("SUCCEEDED")
    const output = task.status === "SUCCEEDED" ? task.output : []
    const probed = await probeBytes(new Uint8Array(await (await fetch(output[0]!)).arrayBuffer()))
    expect(probed.video).toMatchObject({ width: 1280, height: 720 })

    r.fake.lives.push({ prompt: "sdk: to be cancelled", statuses: ["RUNNING"] })
    const other = await client.textToVideo.create({
      model: "veo3.1_fast",
      promptText: "sdk: to be cancelled",
      ratio: "720:1280",
      duration: 6
    })
    expect((await client.tasks.retrieve(other.id)).status).toBe("RUNNING")
    await client.tasks.delete(other.id)
    expect((await client.tasks.retrieve(other.id)).status).toBe("CANCELLED")
    // A finished task's DELETE deletes it: it is gone.
    await client.tasks.delete(created.id)
    await expect(client.tasks.retrieve(created.id)).rejects.toMatchObject({ status: 404 })
    // The SDK's refusals are Runway's: a wrong key is its AuthenticationError (401).
    const stranger = new RunwayML({ apiKey: WRONG_KEY, baseURL: r.fake.url, maxRetries: 0 })
    await expect(stranger.organization.retrieve()).rejects.toMatchObject({ status: 401 })
    expect((await client.organization.retrieve()).creditBalance).toBe(1000)
    // What the SDK sends, the fake checked: the key and the version it targets.
    const sent = r.fake.requests.filter((q) => q.body?.promptText === "sdk: a lantern swings")
    expect(sent[0]!.headers["x-runway-version"]).toBe("2024-11-06")
  })
})
