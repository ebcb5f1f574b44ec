import { NodeContext } from "@effect/platform-node"
import { ConfigProvider, Effect, Exit, Layer, TestClock, TestContext } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { KLING_BASE_URL } from "../../channels/kling/index.ts"
import { makeTokens, mintJwt, NBF_SKEW_S, RENEW_BEFORE_S, TTL_S } from "../../channels/kling/Jwt.ts"
import { Channels } from "../../src/channel/Channels.ts"
import { CatalogLive } from "../../src/Gateway.ts"
import { AppConfig } from "../../src/platform/AppConfig.ts"
import { MediaToolsLive } from "../../src/runtime/node/MediaTools.ts"
import { UpstreamHttpClientLive } from "../../src/runtime/node/UpstreamHttpClient.ts"
import { verifyJwt } from "../fakes/kling.ts"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import {
  ACCOUNT,
  engineRow,
  expectNothingUpstream,
  type KlingSetup,
  runKling,
  startKlingGateway
} from "../support/kling.ts"
import { probeBytes } from "../support/media.ts"
import { query } from "../support/tasks.ts"
import { makeImage, startMediaServer } from "../support/uploads.ts"

/**
 * The `kling` adapter against a fake Kling speaking both API generations over
 * HTTP (docs/adapters/kling.md): each famK mode sent as Kling's body, checked
 * literally against its Requests; results re-hosted by the gateway and
 * playable; the legacy JWT and its clock-skew margin; current polls batched.
 * Faults and states: channel-kling-faults.test.ts.
 */

const PLAIN_720 = "provx-famK-3.0-720p"
const PLAIN_1080 = "provx-famK-3.0-1080p"
const OMNI_720 = "provx-famK-3.0-omni-720p"
const OMNI_1080 = "provx-famK-3.0-omni-1080p"

let current: KlingSetup
let legacy: KlingSetup
let media: Awaited<ReturnType<typeof startMediaServer>>

beforeAll(async () => {
  const [png, png2] = await Promise.all([makeImage("png"), makeImage("png", "80x60")])
  media = await startMediaServer({
    "/first.png": { body: png, type: "image/png" },
    "/last.png": { body: png2, type: "image/png" }
  })
  const plain = "kling-3.0"
  const omni = "kling-3.0-omni"
  ;[current, legacy] = await Promise.all([
    startKlingGateway({
      [PLAIN_720]: [{ channel: "klingai", upstream_model: plain }],
      [PLAIN_1080]: [{ channel: "klingai", upstream_model: plain }],
      [OMNI_720]: [{ channel: "klingai", upstream_model: omni }],
      [OMNI_1080]: [{ channel: "klingai", upstream_model: omni }]
    }),
    startKlingGateway({
      [PLAIN_720]: [{ channel: "klingai-jwt", upstream_model: "kling-v3" }],
      [PLAIN_1080]: [{ channel: "klingai-jwt", upstream_model: "kling-v3" }],
      [OMNI_720]: [{ channel: "klingai-jwt", upstream_model: "kling-v3-omni" }],
      [OMNI_1080]: [{ channel: "klingai-jwt", upstream_model: "kling-v3-omni" }]
    })
  ])
}, 90_000)
afterAll(async () => {
  await current?.close()
  await legacy?.close()
  await media?.close()
})

const download = async (setup: KlingSetup, task: any) => {
  const video = task.result.videos[0]
  // Re-hosted: served by the gateway itself, never Kling's link.
  expect(new URL(video.url).origin).toBe(setup.gw.url)
  return probeBytes(new Uint8Array(await (await fetch(video.url)).arrayBuffer()))
}

describe(`the kling channel, current API (${backend})`, () => {
  it("text only: /text-to-video/{model} with settings and our task id, re-hosted and playable", async () => {
    const { creates, seen, task } = await runKling(current, {
      model: PLAIN_720,
      operation: "generation",
      input: { prompt: "a red fox running through snow" },
      output: { duration: 5 }
    })
    expect(task.status).toBe("succeeded")
    expect(seen.some((t) => t.status === "in_progress")).toBe(true)
    expect(creates).toHaveLength(1)
    expect(creates[0]!.path).toBe("/text-to-video/kling-3.0")
    expect(creates[0]!.headers.authorization).toBe("Bearer kling-api-key-0123456789abcdef")
    expect(creates[0]!.body).toEqual({
      prompt: "a red fox running through snow",
      settings: { audio: "native", resolution: "720p", aspect_ratio: "16:9", duration: 5 },
      options: { external_task_id: task.id }
    })
    const probed = await download(current, task)
    expect(probed.video).toMatchObject({ codec: "h264", width: 160, height: 90 })
    expect(probed.audio?.codec).toBe("aac")
    expect(probed.durationS).toBeGreaterThan(4.8)
    expect(probed.durationS).toBeLessThan(5.3)
    expectNothingUpstream(current.fake, task)

    // Operators do see Kling's task and its answer.
    const view = await operator(current.gw).task(task.id)
    expect(view.attempts[0]).toMatchObject({ channel: "klingai", outcome: "succeeded" })
    expect(view.attempts[0]?.last_answer).toMatchObject({ status: "succeeded", external_id: task.id })
    expect(current.fake.tasks.has((await engineRow(current.gw, task.id)).upstream_id!)).toBe(true)
  })

  it("first and last frame: /image-to-video/{model} contents, no aspect ratio (the image gives it), audio off", async () => {
    const { creates, task } = await runKling(current, {
      model: PLAIN_1080,
      operation: "generation",
      input: {
        prompt: "day turns to night",
        image: { url: `${media.url}/first.png` },
        reference_images: [{ url: `${media.url}/last.png` }]
      },
      output: { duration: 7, aspect_ratio: "9:16", generate_audio: false }
    })
    expect(task.status).toBe("succeeded")
    expect(creates[0]!.path).toBe("/image-to-video/kling-3.0")
    expect(creates[0]!.body).toEqual({
      contents: [
        { type: "prompt", text: "day turns to night" },
        { type: "first_frame", url: `${media.url}/first.png` },
        { type: "last_frame", url: `${media.url}/last.png` }
      ],
      settings: { audio: "off", resolution: "1080p", duration: 7 },
      options: { external_task_id: task.id }
    })
    expect(current.fake.fetched).toContain(`${media.url}/last.png`)
    expect((await download(current, task)).audio).toBeUndefined()
  })

  it("omni, images mode: refer_image items carrying the reference names usable as @name", async () => {
    const { creates, task } = await runKling(current, {
      model: OMNI_720,
      operation: "generation",
      input: {
        prompt: "@hero meets @hero2 in the rain",
        reference_mode: "images",
        reference_images: [
          { url: `${media.url}/first.png`, name: "hero" },
          { url: `${media.url}/last.png`, name: "hero2" },
          { url: `${media.url}/first.png` }
        ]
      },
      output: { duration: 4, aspect_ratio: "9:16" }
    })
    expect(task.status).toBe("succeeded")
    expect(creates[0]!.path).toBe("/omni-video/kling-3.0-omni")
    expect(creates[0]!.body).toEqual({
      contents: [
        { type: "prompt", text: "@hero meets @hero2 in the rain" },
        { type: "refer_image", url: `${media.url}/first.png`, id: "hero" },
        { type: "refer_image", url: `${media.url}/last.png`, id: "hero2" },
        { type: "refer_image", url: `${media.url}/first.png` }
      ],
      settings: { audio: "native", resolution: "720p", aspect_ratio: "9:16", duration: 4 },
      options: { external_task_id: task.id }
    })
    expect((await download(current, task)).video).toMatchObject({ width: 90, height: 160 })
  })

  it("omni, first frame: omni-video with a first_frame item and no aspect ratio", async () => {
    const { creates, task } = await runKling(current, {
      model: OMNI_1080,
      operation: "generation",
      input: { prompt: "the keeper waves", image: { url: `${media.url}/first.png` } },
      output: { duration: 3 }
    })
    expect(task.status).toBe("succeeded")
    expect(creates[0]!.body).toEqual({
      contents: [{ type: "prompt", text: "the keeper waves" }, { type: "first_frame", url: `${media.url}/first.png` }],
      settings: { audio: "native", resolution: "1080p", duration: 3 },
      options: { external_task_id: task.id }
    })
  })

  it("provider_options.famK has no field on the current API: refused before sending, not retryable", async () => {
    const { creates, task } = await runKling(current, {
      model: PLAIN_720,
      operation: "generation",
      input: { prompt: "no negatives here" },
      output: { duration: 4 },
      provider_options: { famK: { negative_prompt: "blur" } }
    })
    expect(creates).toHaveLength(0)
    expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable: false } })
    expect(task.error?.message).toContain("negative_prompt")
    expectNothingUpstream(current.fake, task)
  })

  it("polls many waiting tasks with one GET /tasks?task_ids= carrying every id", async () => {
    const acct = await createAccount(current.gw, { name: "batch", wallet_credits: 100 })
    const prompts = Array.from({ length: 5 }, (_, i) => `batch number ${i}`)
    for (const _ of prompts) current.fake.scenarios.push({ submitted: 1000, processing: 0 })
    const ids: Array<string> = await Promise.all(prompts.map(async (prompt) => {
      const body = { model: PLAIN_720, operation: "generation", input: { prompt }, output: { duration: 4 } } as const
      return (await api(current.gw, acct).createVideo(body)).id
    }))
    const upstream = () => [...current.fake.tasks.values()].filter((t) => prompts.includes(t.body.prompt))
    await eventually(
      () => upstream().length >= 5 && upstream().every((t) => t.observed > 0),
      "the tasks all wait upstream",
      { deadlineMs: 20_000, intervalMs: 50 }
    )
    const before = current.fake.requests.length
    const upstreamIds = upstream().map((t) => t.id)
    const carriesAll = () =>
      current.fake.requests.slice(before).find((r) =>
        r.path === "/tasks" && upstreamIds.every((id) => r.query["task_ids"]?.split(",").includes(id))
      )
    await eventually(
      async () => {
        if (carriesAll() !== undefined) return true
        await query(current.gw, (sql) => sql`UPDATE tasks SET run_at = 0 WHERE id IN ${sql.in(ids)} RETURNING id`)
        return false
      },
      "a batch query carries every task",
      { deadlineMs: 20_000, intervalMs: 400 }
    )
    for (const task of upstream()) task.observed = 1000
    await query(current.gw, (sql) => sql`UPDATE tasks SET run_at = 0 WHERE id IN ${sql.in(ids)} RETURNING id`)
    for (const id of ids) {
      expect((await api(current.gw, acct).waitTask("video", id)).at(-1)?.status).toBe("succeeded")
    }
  })
})

describe(`the kling channel, legacy API (${backend})`, () => {
  it("text only: /v1/videos/text2video with model_name, a string duration, pro for 1080p, the famK options", async () => {
    const { creates, task } = await runKling(legacy, {
      model: PLAIN_1080,
      operation: "generation",
      input: { prompt: "a lighthouse in a storm" },
      output: { duration: 10, aspect_ratio: "9:16" },
      provider_options: { famK: { negative_prompt: "blur, text", cfg_scale: 0.3 } }
    })
    expect(task.status).toBe("succeeded")
    expect(creates[0]!.path).toBe("/v1/videos/text2video")
    expect(creates[0]!.body).toEqual({
      model_name: "kling-v3",
      prompt: "a lighthouse in a storm",
      negative_prompt: "blur, text",
      cfg_scale: 0.3,
      mode: "pro",
      duration: "10",
      sound: "on",
      aspect_ratio: "9:16",
      external_task_id: task.id
    })
    // The JWT: issued by the access key, valid from NBF_SKEW_S before it was made, for TTL_S.
    const jwt = creates[0]!.jwt!
    expect(jwt.iss).toBe(ACCOUNT.accessKey)
    expect(jwt.exp - jwt.nbf).toBe(TTL_S + NBF_SKEW_S)
    expect(jwt.nbf).toBeLessThanOrEqual(Math.floor(creates[0]!.at / 1000) - NBF_SKEW_S + 1)
    const probed = await download(legacy, task)
    expect(probed.video).toMatchObject({ width: 90, height: 160 })
    expect(probed.durationS).toBeGreaterThan(9.8)
    expectNothingUpstream(legacy.fake, task)
    // Polled on the create's own path, which the stored id carries.
    const upstreamId = (await engineRow(legacy.gw, task.id)).upstream_id!
    expect(upstreamId).toMatch(/^text2video:\d+$/)
    expect(
      legacy.fake.requests.some((r) => r.method === "GET" && r.path === `/v1/videos/text2video/${upstreamId.slice(11)}`)
    )
      .toBe(true)
  })

  it("first frame: /v1/videos/image2video with the URL as image, std for 720p, no aspect ratio", async () => {
    const { creates, task } = await runKling(legacy, {
      model: PLAIN_720,
      operation: "generation",
      input: { prompt: "the keeper waves", reference_mode: "frame", image: { url: `${media.url}/first.png` } },
      output: { duration: 5, generate_audio: false }
    })
    expect(task.status).toBe("succeeded")
    expect(creates[0]!.path).toBe("/v1/videos/image2video")
    expect(creates[0]!.body).toEqual({
      model_name: "kling-v3",
      prompt: "the keeper waves",
      image: `${media.url}/first.png`,
      mode: "std",
      duration: "5",
      sound: "off",
      external_task_id: task.id
    })
  })

  it("first and last frame on a plain model: image and image_tail", async () => {
    const { creates, task } = await runKling(legacy, {
      model: PLAIN_720,
      operation: "generation",
      input: {
        prompt: "day to night",
        image: { url: `${media.url}/first.png` },
        reference_images: [{ url: `${media.url}/last.png` }]
      },
      output: { duration: 3 }
    })
    expect(task.status).toBe("succeeded")
    expect(creates[0]!.body).toMatchObject({ image: `${media.url}/first.png`, image_tail: `${media.url}/last.png` })
  })

  it("omni, first and last frame: /v1/videos/omni-video image_list typed first_frame and end_frame", async () => {
    const { creates, task } = await runKling(legacy, {
      model: OMNI_1080,
      operation: "generation",
      input: {
        prompt: "day to night",
        image: { url: `${media.url}/first.png` },
        reference_images: [{ url: `${media.url}/last.png` }]
      },
      output: { duration: 6 }
    })
    expect(task.status).toBe("succeeded")
    expect(creates[0]!.path).toBe("/v1/videos/omni-video")
    expect(creates[0]!.body).toEqual({
      model_name: "kling-v3-omni",
      prompt: "day to night",
      image_list: [
        { image_url: `${media.url}/first.png`, type: "first_frame" },
        { image_url: `${media.url}/last.png`, type: "end_frame" }
      ],
      mode: "pro",
      duration: "6",
      sound: "on",
      external_task_id: task.id
    })
  })

  it("omni, images mode: each @name in the prompt becomes its <<<image_n>>>, with the aspect ratio", async () => {
    const { creates, task } = await runKling(legacy, {
      model: OMNI_720,
      operation: "generation",
      input: {
        prompt: "@hero meets @hero2; @hero smiles",
        reference_mode: "images",
        reference_images: [
          { url: `${media.url}/first.png`, name: "hero" },
          { url: `${media.url}/last.png`, name: "hero2" }
        ]
      },
      output: { duration: 5 }
    })
    expect(task.status).toBe("succeeded")
    expect(creates[0]!.body).toEqual({
      model_name: "kling-v3-omni",
      prompt: "<<<image_1>>> meets <<<image_2>>>; <<<image_1>>> smiles",
      image_list: [{ image_url: `${media.url}/first.png` }, { image_url: `${media.url}/last.png` }],
      mode: "std",
      duration: "5",
      sound: "on",
      aspect_ratio: "16:9",
      external_task_id: task.id
    })
  })

  it("famK options on legacy omni have no field there: refused before sending, not retryable", async () => {
    const { creates, task } = await runKling(legacy, {
      model: OMNI_720,
      operation: "generation",
      input: { prompt: "no cfg for omni" },
      output: { duration: 4 },
      provider_options: { famK: { cfg_scale: 0.5 } }
    })
    expect(creates).toHaveLength(0)
    expect(task).toMatchObject({ status: "failed", error: { code: "video_task_failed", retryable: false } })
  })

  it("a Kling clock 3 s behind ours still accepts the adapter's tokens (the nbf margin)", async () => {
    legacy.fake.clock.offsetMs = -3000
    try {
      const { creates, task } = await runKling(legacy, {
        model: PLAIN_720,
        operation: "generation",
        input: { prompt: "skewed clocks" },
        output: { duration: 3 }
      })
      expect(task.status).toBe("succeeded")
      expect(creates).toHaveLength(1)
    } finally {
      legacy.fake.clock.offsetMs = 0
    }
  })

  it("the fake refuses a token not yet valid (1003), expired (1004), badly signed or from another key (1002)", async () => {
    const now = Math.floor(Date.now() / 1000)
    const at = async (token: string) => verifyJwt(`Bearer ${token}`, ACCOUNT, now)
    // A token minted 60 s in our future has its nbf 55 s ahead of Kling's clock.
    expect(await at(await mintJwt(ACCOUNT.accessKey, ACCOUNT.secretKey, now + 60))).toEqual({ code: 1003 })
    expect(await at(await mintJwt(ACCOUNT.accessKey, ACCOUNT.secretKey, now - TTL_S - 1))).toEqual({ code: 1004 })
    expect(await at(await mintJwt(ACCOUNT.accessKey, "another secret", now))).toEqual({ code: 1002 })
    expect(await at(await mintJwt("another access key", ACCOUNT.secretKey, now))).toEqual({ code: 1002 })
    expect(verifyJwt(undefined, ACCOUNT, now)).toEqual({ code: 1001 })
    expect(await at(await mintJwt(ACCOUNT.accessKey, ACCOUNT.secretKey, now))).toMatchObject({
      payload: { iss: ACCOUNT.accessKey, nbf: now - NBF_SKEW_S, exp: now + TTL_S }
    })
    // Over HTTP: the create is refused with Kling's envelope.
    const refused = await fetch(`${legacy.fake.url}/v1/videos/text2video`, {
      method: "POST",
      headers: {
        authorization: `Bearer ${await mintJwt(ACCOUNT.accessKey, ACCOUNT.secretKey, now + 60)}`,
        "content-type": "application/json"
      },
      body: JSON.stringify({ model_name: "kling-v3", prompt: "x" })
    })
    expect(refused.status).toBe(401)
    expect(await refused.json()).toMatchObject({ code: 1003 })
  })

  it("a token is reused while more than RENEW_BEFORE_S of it is left, then minted again before it expires", async () => {
    const tokens = makeTokens(ACCOUNT.accessKey, ACCOUNT.secretKey)
    const payloadOf = (token: string) => JSON.parse(Buffer.from(token.split(".")[1]!, "base64url").toString("utf8"))
    const run = Effect.gen(function*() {
      yield* TestClock.setTime(1_800_000_000_000)
      const first = yield* tokens.token
      yield* TestClock.adjust(`${TTL_S - RENEW_BEFORE_S - 1} seconds`)
      const same = yield* tokens.token
      yield* TestClock.adjust("2 seconds")
      const renewed = yield* tokens.token
      yield* TestClock.adjust("1 seconds")
      const reused = yield* tokens.token
      // Kling answered 1003/1004: the next request carries a fresh token, even with time left on this one.
      yield* tokens.forget
      const afterRefusal = yield* tokens.token
      return { first, same, renewed, reused, afterRefusal }
    })
    const { afterRefusal, first, renewed, reused, same } = await Effect.runPromise(
      run.pipe(Effect.provide(TestContext.TestContext))
    )
    expect(same).toBe(first)
    expect(renewed).not.toBe(first)
    expect(payloadOf(first)).toEqual({
      iss: ACCOUNT.accessKey,
      nbf: 1_800_000_000 - NBF_SKEW_S,
      exp: 1_800_000_000 + TTL_S
    })
    // Renewed while the old one still had RENEW_BEFORE_S - 1 seconds: no request carries a token about to lapse.
    expect(payloadOf(renewed).exp - payloadOf(first).exp).toBe(TTL_S - RENEW_BEFORE_S + 1)
    expect(reused).toBe(renewed)
    expect(afterRefusal).not.toBe(renewed)
    expect(payloadOf(afterRefusal).exp - payloadOf(renewed).exp).toBe(1)
  })

  it("settings: api and its credentials from the environment; the other generation's keys or no api refused", async () => {
    const boot = (channel: Record<string, unknown>, env: Record<string, string> = { A: "a", S: "s", K: "k" }) => {
      const dir = configWith("models.json", (m) => (m.channels.k = { adapter: "kling", ...channel }))
      const provider = ConfigProvider.fromMap(new Map(Object.entries({ CONFIG_DIR: dir, ...env })))
      return Effect.runPromiseExit(
        Effect.map(Channels, (c) => c.get("k")!.settings).pipe(
          Effect.provide(CatalogLive.pipe(
            Layer.provideMerge(AppConfig.layer),
            Layer.provide([MediaToolsLive, UpstreamHttpClientLive, NodeContext.layer]),
            Layer.provide(Layer.setConfigProvider(provider))
          ))
        )
      )
    }
    const jwt = { credentials: { access_key: { env: "A" }, secret_key: { env: "S" } } }
    const key = { credentials: { api_key: { env: "K" } } }
    const legacyOk = await boot({ api: "legacy", ...jwt })
    expect(Exit.isSuccess(legacyOk) && legacyOk.value.base_url).toBe(KLING_BASE_URL)
    const beijing = await boot({ api: "current", ...key, base_url: "https://api-beijing.klingai.com" })
    expect(Exit.isSuccess(beijing) && beijing.value.base_url).toBe("https://api-beijing.klingai.com")
    for (
      const channel of [
        { api: "current", ...jwt },
        { api: "legacy", ...key },
        key,
        { api: "v2", ...key },
        { api: "legacy", credentials: { access_key: "plain", secret_key: { env: "S" } } }
      ]
    ) {
      expect(Exit.isFailure(await boot(channel))).toBe(true)
    }
    expect(Exit.isFailure(await boot({ api: "legacy", ...jwt }, { A: "a" }))).toBe(true)
  })
})
