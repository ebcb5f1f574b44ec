import { createServer } from "node:net"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeFal, startFakeFal } from "../fakes/fal.ts"
import { type FakeReplicate, startFakeReplicate } from "../fakes/replicate.ts"
import { createAccount, operator, type TestAccount } from "../support/adminApi.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { FAL_KEY } from "../support/fal.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { errorOf, raw } from "../support/http.ts"
import { probeBytes } from "../support/media.ts"
import { REPLICATE_TOKEN } from "../support/replicate.ts"
import { query } from "../support/tasks.ts"
import { createAndWait, engineRow, expectChargedOnce, quickEngine } from "../support/upstream.ts"

/**
 * What a route cannot do (docs/configuration.md, Routes: what a route
 * takes): a route whose upstream makes only silent videos (Replicate's
 * Seedance 1 Pro, as the adapter's table knows it), one that always makes a
 * soundtrack (a fal route the operator marks `audio: "always"`), one that
 * takes no last frame. A request no route of its model can take is refused
 * at creation with the spec's 400 (charged nothing, created nothing, sent
 * nowhere); one that another route can take goes there; failover passes
 * over a route that cannot take the task. Never a video with sound asked
 * silent, or silent asked with sound.
 */

const SILENT_ONLY = "provx-famS-720p"
const FAILS_OVER = "provx-famS-1080p"
const ALWAYS_ONLY = "provx-famK-3.0-720p"
const ALWAYS_THEN_SWITCH = "provx-famK-3.0-1080p"
const NO_LAST_FRAME = "provy-famS-2.5-480p"

const SEEDANCE_FAL = "fal-ai/bytedance/seedance/v1.5/pro/text-to-video"
const KLING_FAL = "fal-ai/kling-video/v3/pro/text-to-video"

let replicate: FakeReplicate
let fal: FakeFal
let gw: TestGateway

/** A loopback port nothing listens on: a connection there is refused before a byte is sent. */
const closedPort = async () => {
  const server = createServer()
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const port = (server.address() as { port: number }).port
  await new Promise<void>((resolve) => server.close(() => resolve()))
  return port
}

beforeAll(async () => {
  ;[replicate, fal] = await Promise.all([startFakeReplicate([REPLICATE_TOKEN]), startFakeFal(FAL_KEY)])
  const down = await closedPort()
  const config = configWith("models.json", (models) => {
    const falChannel = {
      adapter: "fal",
      credentials: { api_key: { env: "FAL_KEY" } },
      concurrency: 10,
      timeouts: { submit_s: 2, poll_s: 2 }
    }
    models.channels["fal-market"] = { ...falChannel, base_url: fal.url }
    models.channels["fal-down"] = { ...falChannel, base_url: `http://127.0.0.1:${down}`, breaker_cooldown_s: 0 }
    models.channels.marketplace = {
      adapter: "replicate",
      base_url: replicate.url,
      credentials: { api_token: { env: "REPLICATE_TOKEN" } },
      concurrency: 10,
      timeouts: { submit_s: 2, poll_s: 2 }
    }
    const seedanceReplicate = { channel: "marketplace", upstream_model: "bytedance/seedance-1-pro" }
    const klingAlways = { channel: "fal-market", upstream_model: KLING_FAL, narrower: { audio: "always" } }
    models.models[SILENT_ONLY].channels = [seedanceReplicate]
    models.models[FAILS_OVER].channels = [
      { channel: "fal-down", upstream_model: SEEDANCE_FAL },
      seedanceReplicate,
      "sandbox"
    ]
    models.models[ALWAYS_ONLY].channels = [klingAlways]
    models.models[ALWAYS_THEN_SWITCH].channels = [
      klingAlways,
      { channel: "marketplace", upstream_model: "kwaivgi/kling-v3-video" }
    ]
    models.models[NO_LAST_FRAME].channels = [{ channel: "sandbox", narrower: { last_frame: false } }]
  })
  quickEngine(config)
  gw = await startGateway({ ROLE: "all", CONFIG_DIR: config, REPLICATE_TOKEN, FAL_KEY })
}, 90_000)
afterAll(async () => {
  await gw?.close()
  await replicate?.close()
  await fal?.close()
})

const body = (model: string, prompt: string, output: Record<string, unknown> = {}, input = {}) => ({
  model,
  operation: "generation",
  input: { prompt, ...input },
  output: { duration: 5, ...output }
})

/** Raw: the create and the quote as sent, so a refusal's body is read as the caller gets it. */
const create = (acct: TestAccount, json: unknown) => raw(gw, "POST", "/v1/video/tasks", { key: acct.model.key, json })
const quote = (acct: TestAccount, json: unknown) =>
  raw(gw, "POST", "/v1/video/tasks/quote", { key: acct.model.key, json })

const upstreamCount = () => replicate.requests.length + fal.requests.length
const tasksOf = async (acct: TestAccount) =>
  (await query<{ n: number }>(gw, (sql) => sql`SELECT count(*)::int AS n FROM tasks WHERE account_id = ${acct.id}`))[
    0
  ]!.n

/** A create refused at creation: the spec's 400 naming the field, and nothing created, charged or sent. */
const expectRefusedAtCreation = async (json: unknown, message: RegExp) => {
  const acct = await createAccount(gw, { name: "refused", wallet_credits: 100 })
  const sent = upstreamCount()
  const reply = await create(acct, json)
  expect(reply.status).toBe(400)
  expect(errorOf(reply.body)).toMatchObject({ code: "invalid_video_parameter", type: "invalid_request_error" })
  expect(String(errorOf(reply.body)?.message)).toMatch(message)
  // The quote agrees: the same 400.
  const quoted = await quote(acct, json)
  expect(quoted.status).toBe(400)
  expect(errorOf(quoted.body)).toMatchObject({ code: "invalid_video_parameter", message: errorOf(reply.body)?.message })
  expect((await operator(gw).account(acct.id)).wallet_credits).toBe(100)
  expect(await tasksOf(acct)).toBe(0)
  expect(upstreamCount()).toBe(sent)
  // Nothing of the route reaches the caller.
  expect(JSON.stringify(reply.body)).not.toMatch(/marketplace|fal-market|replicate|seedance|kling-video/i)
}

const soundOf = async (task: { result: { videos: ReadonlyArray<{ url: string }> } | null }) => {
  const bytes = new Uint8Array(await (await fetch(task.result!.videos[0]!.url)).arrayBuffer())
  return (await probeBytes(bytes)).audio
}

describe(`what a route cannot do (${backend})`, () => {
  it("a silent-only route and the default soundtrack: 400 at creation, nothing charged, nothing sent", async () => {
    await expectRefusedAtCreation(body(SILENT_ONLY, "a fox with sound"), /"output\.generate_audio" must be false/)
    await expectRefusedAtCreation(
      body(SILENT_ONLY, "a fox, loudly", { generate_audio: true }),
      /"output\.generate_audio" must be false/
    )
  })

  it("a silent-only route asked for a silent video: quoted, created, run on Replicate, silent", async () => {
    const silent = body(SILENT_ONLY, "a quiet fox", { generate_audio: false })
    const acct = await createAccount(gw, { name: "quote", wallet_credits: 100 })
    const quoted = await quote(acct, silent)
    expect(quoted.status).toBe(200)
    const before = replicate.requests.length
    const { task } = await createAndWait(gw, silent, { intervalMs: 50 })
    expect(task.status).toBe("succeeded")
    const creates = replicate.requests.slice(before).filter((r) => r.method === "POST")
    expect(creates).toHaveLength(1)
    expect(creates[0]!.body.input).not.toHaveProperty("generate_audio")
    expect(await soundOf(task)).toBeUndefined()
    await expectChargedOnce(gw, task.id)
  })

  it("an always-sound route asked for a silent video: 400 at creation when it is the model's only route", async () => {
    await expectRefusedAtCreation(
      body(ALWAYS_ONLY, "a quiet lake", { generate_audio: false }),
      /"output\.generate_audio" must be true/
    )
    // With the soundtrack it takes, it runs there and sounds.
    const { task } = await createAndWait(gw, body(ALWAYS_ONLY, "a loud lake"), { intervalMs: 50 })
    expect(task.status).toBe("succeeded")
    expect(await soundOf(task)).toMatchObject({ codec: "aac" })
  })

  it("an always-sound route asked for a silent video: the model's next route takes it, and it is silent", async () => {
    const sent = { fal: fal.requests.length, replicate: replicate.requests.length }
    const { task } = await createAndWait(gw, body(ALWAYS_THEN_SWITCH, "a quiet forest", { generate_audio: false }), {
      intervalMs: 50
    })
    expect(task.status).toBe("succeeded")
    expect(await engineRow(gw, task.id)).toMatchObject({ channel: "marketplace" })
    expect(fal.requests.slice(sent.fal)).toEqual([])
    const creates = replicate.requests.slice(sent.replicate).filter((r) => r.method === "POST")
    expect(creates.map((c) => c.body.input.generate_audio)).toEqual([false])
    expect(await soundOf(task)).toBeUndefined()
    await expectChargedOnce(gw, task.id)
    // The default soundtrack stays on the first route.
    const loud = await createAndWait(gw, body(ALWAYS_THEN_SWITCH, "a loud forest"), { intervalMs: 50 })
    expect(loud.task.status).toBe("succeeded")
    expect(await engineRow(gw, loud.task.id)).toMatchObject({ channel: "fal-market" })
    expect(await soundOf(loud.task)).toMatchObject({ codec: "aac" })
  })

  it("failover passes over a route that cannot take the task, and not over one that can", async () => {
    // With sound: fal refuses the connection, Replicate's Seedance cannot make sound, so the sandbox runs it.
    const sent = replicate.requests.length
    const { task } = await createAndWait(gw, body(FAILS_OVER, "a loud harbour"), { intervalMs: 50 })
    expect(task.status).toBe("succeeded")
    expect(await engineRow(gw, task.id)).toMatchObject({ channel: "sandbox" })
    expect(replicate.requests.slice(sent)).toEqual([])
    const view = await operator(gw).task(task.id)
    expect(view.attempts[0]).toMatchObject({ channel: "fal-down", outcome: "failover" })
    expect(view.attempts.map((a) => a.channel)).not.toContain("marketplace")
    expect(await soundOf(task)).toMatchObject({ codec: "aac" })
    await expectChargedOnce(gw, task.id)

    // Silent: Replicate's Seedance takes it, so the task moves there.
    const quiet = await createAndWait(gw, body(FAILS_OVER, "a quiet harbour", { generate_audio: false }), {
      intervalMs: 50
    })
    expect(quiet.task.status).toBe("succeeded")
    expect(await engineRow(gw, quiet.task.id)).toMatchObject({ channel: "marketplace" })
    expect(await soundOf(quiet.task)).toBeUndefined()
  })

  it("a route without a last frame: a first and a last frame are refused at creation, a first frame alone is not", async () => {
    const frames = (n: number) => ({
      reference_mode: "frame",
      image: { url: "https://example.com/first.png" },
      ...(n > 1 ? { reference_images: [{ url: "https://example.com/last.png" }] } : {})
    })
    await expectRefusedAtCreation(
      body(NO_LAST_FRAME, "first and last", {}, frames(2)),
      /last frame \("input\.reference_images"\) is not supported/
    )
    const acct = await createAccount(gw, { name: "first frame", wallet_credits: 100 })
    const quoted = await quote(acct, body(NO_LAST_FRAME, "first only", {}, frames(1)))
    expect(quoted.status).toBe(200)
  })
})
