import { NodeContext } from "@effect/platform-node"
import { ConfigProvider, Effect, Exit, Layer } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { BYTEPLUS_BASE_URL } from "../../channels/ark/index.ts"
import { listBatches, MAX_IDS_PER_LIST } from "../../channels/ark/Requests.ts"
import { Channels } from "../../src/channel/Channels.ts"
import { CatalogLive } from "../../src/Gateway.ts"
import { AppConfig } from "../../src/platform/AppConfig.ts"
import { MediaToolsLive } from "../../src/runtime/node/MediaTools.ts"
import { UpstreamHttpClientLive } from "../../src/runtime/node/UpstreamHttpClient.ts"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { type ArkSetup, engineRow, expectNothingUpstream, runArk, startArkGateway, UPSTREAM } from "../support/ark.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { probeBytes } from "../support/media.ts"
import { query } from "../support/tasks.ts"
import { audio, image, makeAudio, makeImage, makeVideo, startMediaServer, uploadAll } from "../support/uploads.ts"

/**
 * The `ark` adapter against a fake Ark speaking its protocol over HTTP
 * (docs/adapters/ark.md): each famS mode sent as Ark's body, checked literally
 * against its Requests; results re-hosted by the gateway and playable; polls
 * batched through the list endpoint. Faults and states:
 * channel-ark-faults.test.ts.
 */

const TEXT = "provy-famS-2.0-480p"
const FIRST = "provy-famS-2.5-720p"
const FIRST_LAST = "provx-famS-1080p"
const MEDIA = "provy-famS-2.0-720p"
const EXPIRES = 21_600 // the channel's default timeouts.deadline_s

let ark: ArkSetup
let media: Awaited<ReturnType<typeof startMediaServer>>

beforeAll(async () => {
  const [png, png2, clip] = await Promise.all([makeImage("png"), makeImage("png", "80x60"), makeVideo(3)])
  media = await startMediaServer({
    "/still.png": { body: png, type: "image/png" },
    "/last.png": { body: png2, type: "image/png" },
    "/clip.mp4": { body: clip, type: "video/mp4" }
  })
  ark = await startArkGateway({
    [TEXT]: [{ channel: "byteplus", upstream_model: UPSTREAM }],
    [FIRST]: [{ channel: "byteplus", upstream_model: "ep-20261101-seedance25" }],
    [FIRST_LAST]: [{ channel: "byteplus", upstream_model: "seedance-1-5-pro-251215" }],
    [MEDIA]: [{ channel: "byteplus", upstream_model: UPSTREAM }]
  })
}, 60_000)
afterAll(async () => {
  await ark?.close()
  await media?.close()
})

const download = async (task: any) => {
  const video = task.result.videos[0]
  // Re-hosted: served by the gateway itself, never Ark's 24-hour link.
  expect(new URL(video.url).origin).toBe(ark.gw.url)
  return probeBytes(new Uint8Array(await (await fetch(video.url)).arrayBuffer()))
}

describe(`the ark channel: requests and results (${backend})`, () => {
  it("text only: the prompt as the one content item, the model's resolution, re-hosted and playable", async () => {
    const { creates, seen, task } = await runArk(ark, {
      model: TEXT,
      operation: "generation",
      input: { prompt: "a red fox running through snow" },
      output: { duration: 5 }
    })
    expect(task.status).toBe("succeeded")
    expect(seen.some((t) => t.status === "in_progress")).toBe(true)
    expect(creates).toHaveLength(1)
    expect(creates[0]!.path).toBe("/api/v3/contents/generations/tasks")
    expect(creates[0]!.headers.authorization).toBe("Bearer ark-key-0123456789abcdef")
    expect(creates[0]!.body).toEqual({
      model: "dreamina-seedance-2-0-260128",
      content: [{ type: "text", text: "a red fox running through snow" }],
      resolution: "480p",
      ratio: "16:9",
      duration: 5,
      generate_audio: true,
      execution_expires_after: EXPIRES
    })
    const probed = await download(task)
    expect(probed.video).toMatchObject({ codec: "h264", width: 160, height: 90 })
    expect(probed.audio?.codec).toBe("aac")
    expect(probed.durationS).toBeGreaterThan(4.8)
    expect(probed.durationS).toBeLessThan(5.3)
    expectNothingUpstream(ark.fake, task)

    // Operators do see Ark's task and its answer.
    const view = await operator(ark.gw).task(task.id)
    expect(view.attempts[0]).toMatchObject({ channel: "byteplus", outcome: "succeeded" })
    expect(view.attempts[0]?.last_answer).toMatchObject({ status: "succeeded", model: UPSTREAM })
    expect((await engineRow(ark.gw, task.id)).upstream_id).toMatch(/^cgt-/)
  })

  it("first frame, with the famS options: role first_frame, seed and camera_fixed as body fields", async () => {
    const url = `${media.url}/still.png`
    const { creates, task } = await runArk(ark, {
      model: FIRST,
      operation: "generation",
      input: { prompt: "the keeper waves from the door", reference_mode: "frame", image: { url } },
      output: { duration: 6, aspect_ratio: "9:16", generate_audio: false },
      provider_options: { famS: { seed: 42, camera_fixed: true } }
    })
    expect(task.status).toBe("succeeded")
    expect(creates[0]!.body).toEqual({
      model: "ep-20261101-seedance25",
      content: [
        { type: "text", text: "the keeper waves from the door" },
        { type: "image_url", image_url: { url: `${media.url}/still.png` }, role: "first_frame" }
      ],
      resolution: "720p",
      ratio: "9:16",
      duration: 6,
      generate_audio: false,
      execution_expires_after: EXPIRES,
      seed: 42,
      camera_fixed: true
    })
    expect(ark.fake.fetched).toContain(url)
    const probed = await download(task)
    expect(probed.video).toMatchObject({ width: 90, height: 160 })
    expect(probed.audio).toBeUndefined()
  })

  it("first and last frame: input.image first, reference_images[0] last", async () => {
    const { creates, task } = await runArk(ark, {
      model: FIRST_LAST,
      operation: "generation",
      input: {
        prompt: "day turns to night",
        image: { url: `${media.url}/still.png` },
        reference_images: [{ url: `${media.url}/last.png` }]
      },
      output: { duration: 4, aspect_ratio: "1:1" }
    })
    expect(task.status).toBe("succeeded")
    expect(creates[0]!.body).toEqual({
      model: "seedance-1-5-pro-251215",
      content: [
        { type: "text", text: "day turns to night" },
        { type: "image_url", image_url: { url: `${media.url}/still.png` }, role: "first_frame" },
        { type: "image_url", image_url: { url: `${media.url}/last.png` }, role: "last_frame" }
      ],
      resolution: "1080p",
      ratio: "1:1",
      duration: 4,
      generate_audio: true,
      execution_expires_after: EXPIRES
    })
  })

  it("media references: images, a video and an audio with their roles; the gateway's own upload URLs reach Ark", async () => {
    const acct = await createAccount(ark.gw, { name: "uploader", wallet_credits: 10 })
    const [still, tone] = await uploadAll(ark.gw, acct.resource.key, [
      image(await makeImage("png")),
      audio(await makeAudio("mp3", 3), "mp3")
    ])
    const { creates, task } = await runArk(ark, {
      model: MEDIA,
      operation: "generation",
      input: {
        prompt: "@hero walks into the clip to the tune",
        reference_mode: "media",
        image: { url: still.url, name: "hero" },
        reference_images: [{ url: `${media.url}/still.png` }],
        reference_videos: [{ url: `${media.url}/clip.mp4` }],
        reference_audios: [{ url: tone.url }]
      },
      output: { duration: 8, aspect_ratio: "21:9" }
    })
    expect(task.status).toBe("succeeded")
    expect(creates[0]!.body).toEqual({
      model: "dreamina-seedance-2-0-260128",
      content: [
        // Ark has no field for reference names: the prompt goes as written.
        { type: "text", text: "@hero walks into the clip to the tune" },
        { type: "image_url", image_url: { url: still.url }, role: "reference_image" },
        { type: "image_url", image_url: { url: `${media.url}/still.png` }, role: "reference_image" },
        { type: "video_url", video_url: { url: `${media.url}/clip.mp4` }, role: "reference_video" },
        { type: "audio_url", audio_url: { url: tone.url }, role: "reference_audio" }
      ],
      resolution: "720p",
      ratio: "21:9",
      duration: 8,
      generate_audio: true,
      execution_expires_after: EXPIRES
    })
    // Ark fetched every reference itself, the gateway's signed upload URLs included.
    for (const url of [still.url, tone.url, `${media.url}/clip.mp4`]) expect(ark.fake.fetched).toContain(url)
    expect(new URL(still.url).origin).toBe(ark.gw.url)
    expect((await download(task)).video).toMatchObject({ width: 224, height: 96 })
  })

  it("camera_fixed with reference media is refused before sending: failed, not retryable", async () => {
    const { creates, task } = await runArk(ark, {
      model: MEDIA,
      operation: "generation",
      input: { prompt: "a still camera", reference_images: [{ url: `${media.url}/still.png` }] },
      output: { duration: 4 },
      provider_options: { famS: { camera_fixed: true } }
    })
    expect(creates).toHaveLength(0)
    expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable: false } })
    expect(task.error?.message).toContain("camera_fixed")
  })

  it("polls many waiting tasks with one list call carrying every id, and never one GET per task", async () => {
    const acct = await createAccount(ark.gw, { name: "batch", wallet_credits: 100 })
    const prompts = Array.from({ length: 6 }, (_, i) => `batch number ${i}`)
    // Queued until released below, so all six wait upstream at once.
    for (const _ of prompts) ark.fake.scenarios.push({ queued: 1000, running: 0 })
    const ids: Array<string> = await Promise.all(prompts.map(async (prompt) => {
      const body = { model: TEXT, operation: "generation", input: { prompt }, output: { duration: 4 } } as const
      return (await api(ark.gw, acct).createVideo(body)).id
    }))
    const upstream = () => [...ark.fake.tasks.values()].filter((t) => prompts.includes(t.body.content[0].text))
    await eventually(
      () => upstream().length >= 6 && upstream().every((t) => t.observed > 0),
      "the tasks all wait upstream",
      { deadlineMs: 20_000, intervalMs: 50 }
    )
    // Due together: the next poller pass takes all six. A pass already under way reschedules the tasks it
    // holds after this update, so it is made again until one pass has taken all six.
    const before = ark.fake.requests.length
    const upstreamIds = upstream().map((t) => t.id)
    const carriesAll = () =>
      ark.fake.requests.slice(before).find((r) => upstreamIds.every((id) => r.query["filter.task_ids"]?.includes(id)))
    await eventually(
      async () => {
        if (carriesAll() !== undefined) return true
        await query(ark.gw, (sql) => sql`UPDATE tasks SET run_at = 0 WHERE id IN ${sql.in(ids)} RETURNING id`)
        return false
      },
      "a list call carries every task",
      { deadlineMs: 20_000, intervalMs: 400 }
    )
    expect(carriesAll()!.path).toBe("/api/v3/contents/generations/tasks")
    expect(carriesAll()!.query).toMatchObject({
      page_num: ["1"],
      page_size: [String(carriesAll()!.query["filter.task_ids"]!.length)]
    })

    // Released upstream, and due at once rather than after their backoff.
    for (const task of upstream()) task.observed = 1000
    await query(ark.gw, (sql) => sql`UPDATE tasks SET run_at = 0 WHERE id IN ${sql.in(ids)} RETURNING id`)
    for (const id of ids) expect((await api(ark.gw, acct).waitTask("video", id)).at(-1)?.status).toBe("succeeded")
    expect(ark.fake.requests.filter((r) => r.method === "GET" && r.path.includes("/tasks/"))).toEqual([])
  })

  it("splits ids into list calls of at most a page (500) whose query string a proxy accepts (under 8 KiB)", () => {
    const ids = (n: number) => Array.from({ length: n }, (_, i) => `cgt-20260514183217-${String(i).padStart(5, "0")}`)
    // The engine's batch of 100 is one call.
    expect(listBatches(ids(100)).map((b) => b.length)).toEqual([100])
    const batches = listBatches(ids(1200))
    expect(batches.flat()).toEqual(ids(1200))
    for (const batch of batches) {
      expect(batch.length).toBeLessThanOrEqual(MAX_IDS_PER_LIST)
      expect(batch.map((id) => `&filter.task_ids=${id}`).join("").length).toBeLessThan(8000)
    }
    expect(batches.length).toBeLessThan(10)
  })

  it("settings: BytePlus by default, Volcengine by base_url, the key from the environment, unknown keys refused", async () => {
    const boot = (channel: Record<string, unknown>, env: Record<string, string> = { K: "k" }) => {
      const dir = configWith("models.json", (m) => (m.channels.ark = { adapter: "ark", ...channel }))
      const provider = ConfigProvider.fromMap(new Map(Object.entries({ CONFIG_DIR: dir, ...env })))
      return Effect.runPromiseExit(
        Effect.map(Channels, (c) => c.get("ark")!.settings).pipe(
          Effect.provide(CatalogLive.pipe(
            Layer.provideMerge(AppConfig.layer),
            Layer.provide([MediaToolsLive, UpstreamHttpClientLive, NodeContext.layer]),
            Layer.provide(Layer.setConfigProvider(provider))
          ))
        )
      )
    }
    const key = { credentials: { api_key: { env: "K" } } }
    const plain = await boot(key)
    expect(Exit.isSuccess(plain) && plain.value.base_url).toBe(BYTEPLUS_BASE_URL)
    const volc = await boot({ ...key, base_url: "https://ark.cn-beijing.volces.com/api/v3" })
    expect(Exit.isSuccess(volc) && volc.value.base_url).toBe("https://ark.cn-beijing.volces.com/api/v3")
    for (
      const [channel, env, why] of [
        [{ ...key, base_ulr: "https://x" }, { K: "k" }, /channels\.ark\.base_ulr/],
        [key, {}, /environment variable K is not set/],
        [{ credentials: { api_key: "plain-text-key" } }, { K: "k" }, /channels\.ark\.credentials\.api_key/]
      ] as const
    ) {
      const exit = await boot(channel, env)
      expect(Exit.isFailure(exit) && String((exit.cause as any).error?.message)).toMatch(why)
    }
  })
})
