import { existsSync, rmSync } from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeArk, startFakeArk } from "../fakes/ark.ts"
import { type FakeVideos, startFakeVideos } from "../fakes/openai-videos.ts"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { ARK_KEY, UPSTREAM } from "../support/ark.ts"
import { localObjectFile } from "../support/assets.ts"
import { alsoWith, configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { FAST, KEY as VIDEOS_KEY, videoTask } from "../support/openaiVideos.ts"
import { query } from "../support/tasks.ts"
import { image, makeImage, uploadAll } from "../support/uploads.ts"
import { quickEngine } from "../support/upstream.ts"

/**
 * Data minimisation (docs/operating.md): the `private` group keeps a task's
 * prompt, references and metadata only while it runs. A task through Ark
 * with a confirmed upload as its first frame ends; then nothing of what the
 * caller wrote or pointed at is left in any table of the database, in the
 * operator's view or in the log, the upload's bytes are gone from the store,
 * and Ark was asked to delete its record of the task (DELETE), recorded on
 * the attempt. An OpenAI Videos upstream is asked the same (its DELETE of a
 * finished video). An idempotent replay still answers the task; an account
 * of the default group keeps its request.
 */

const MODEL = "provy-famS-2.5-720p"
const PROMPT = "the lighthouse keeper's secret recipe for plum jam"
const SECRET = "customer-7781-order-plum"

let fake: FakeArk
let videos: FakeVideos
let gw: TestGateway
let config: string
const logged: Array<string> = []
const write = process.stdout.write.bind(process.stdout)

beforeAll(async () => {
  fake = await startFakeArk([ARK_KEY])
  videos = await startFakeVideos(VIDEOS_KEY)
  config = configWith("models.json", (models) => {
    models.channels.byteplus = {
      adapter: "ark",
      base_url: fake.url,
      credentials: { api_key: { env: "ARK_KEY" } },
      concurrency: 10,
      timeouts: { submit_s: 5, poll_s: 2 }
    }
    models.models[MODEL].channels = [{ channel: "byteplus", upstream_model: UPSTREAM }]
    models.channels.ovideos = {
      adapter: "openai-videos",
      base_url: videos.url,
      credentials: { api_key: { env: "OPENAI_VIDEOS_KEY" } },
      concurrency: 10,
      timeouts: { submit_s: 5, poll_s: 2, download_s: 30 }
    }
    models.models[FAST].channels = [{ channel: "ovideos", upstream_model: "sora-2" }]
  })
  alsoWith(config, "groups.json", (groups) => {
    groups.groups.private = { multiplier: 1, description: "Requests kept while they run", redact_requests: true }
  })
  alsoWith(config, "limits.json", (limits) => {
    limits.retention = { sweep_interval_s: 1 }
  })
  quickEngine(config)
  // Whatever the service writes to its log while it runs, kept to be searched.
  process.stdout.write = ((chunk: string | Uint8Array, ...rest: Array<any>) => {
    logged.push(typeof chunk === "string" ? chunk : Buffer.from(chunk).toString())
    return write(chunk, ...rest)
  }) as typeof process.stdout.write
  gw = await startGateway({ ROLE: "all", CONFIG_DIR: config, ARK_KEY, OPENAI_VIDEOS_KEY: VIDEOS_KEY })
}, 60_000)
afterAll(async () => {
  process.stdout.write = write
  await gw?.close()
  await fake?.close()
  await videos?.close()
  rmSync(config, { recursive: true, force: true })
})

/** Every row of every table of the service's schema, as text. */
const everyRow = async () => {
  const tables = await query<{ name: string }>(
    gw,
    (sql) =>
      sql`SELECT table_name AS name FROM information_schema.tables
      WHERE table_schema = current_schema() AND table_type = 'BASE TABLE'`
  )
  const rows: Array<string> = []
  for (const { name } of tables) {
    const found = await query<{ row: string }>(gw, (sql) => sql`SELECT t::text AS row FROM ${sql(name)} t`)
    rows.push(...found.map((r) => `${name}: ${r.row}`))
  }
  return rows
}

const body = (url: string) => ({
  model: MODEL,
  operation: "generation" as const,
  input: { prompt: PROMPT, reference_mode: "frame" as const, image: { url } },
  output: { duration: 5 },
  metadata: { order: SECRET }
})

describe(`data minimisation (${backend})`, () => {
  it("after the task ends nothing the caller wrote is kept, the upload is gone, Ark deleted its copy", async () => {
    const acct = await createAccount(gw, { name: "private", wallet_credits: 100, group: "private" })
    const [still] = await uploadAll(gw, acct.resource.key, [image(await makeImage("png"))])
    const [upload] = await query<{ storage_key: string; pinned_key: string | null }>(
      gw,
      (sql) => sql`SELECT storage_key, pinned_key FROM media_uploads WHERE account_id = ${acct.id}`
    )
    const uploadKeys = [upload!.storage_key, upload!.pinned_key].filter((k): k is string => k !== null)
    expect(uploadKeys.some((k) => existsSync(localObjectFile(gw, k)))).toBe(true)

    const tasks = api(gw, acct)
    const created = await tasks.createVideo(body(still!.url), { idempotencyKey: "plum-1" })
    // The task keeps what the caller wrote while it runs. Read from the create's answer: the last poll of the wait
    // below can come after the redaction, which may follow the task's end before that poll.
    expect(created.metadata).toEqual({ order: SECRET })
    const done = (await tasks.waitTask("video", created.id)).at(-1)!
    expect(done.status).toBe("succeeded")
    // Ark's id as the operator sees it: under load its copy can be deleted before the poll above returns.
    const upstreamId = (await operator(gw).task(created.id)).attempts.at(-1)!.upstream_id!
    expect(upstreamId).toMatch(/^cgt-/)
    // Ark was sent the prompt and the upload's URL while the task ran.
    expect(JSON.stringify(fake.requests.find((r) => r.method === "POST")!.body)).toContain(PROMPT)

    await eventually(async () => (await operator(gw).task(created.id)).engine.redacted_at !== null, "redacted")
    await eventually(
      async () => (await operator(gw).task(created.id)).attempts.at(-1)!.provider_copy === "deleted",
      "Ark's copy deleted"
    )
    // Ark's record of the task is gone: a DELETE of it, and the fake no longer has it.
    expect(fake.requests.some((r) => r.method === "DELETE" && r.path.endsWith(`/${upstreamId}`))).toBe(true)
    expect(fake.tasks.has(upstreamId)).toBe(false)

    // The upload's bytes go with it (the upload sweep, once no running task uses them).
    await eventually(() => uploadKeys.every((k) => !existsSync(localObjectFile(gw, k))), "the upload's bytes removed")

    // Not a trace in the database, the operator's view or the log.
    const leaks = (text: string) => [PROMPT, SECRET, still!.url].filter((s) => text.includes(s))
    const rows = await everyRow()
    expect(rows.filter((r) => leaks(r).length > 0)).toEqual([])
    expect(leaks(JSON.stringify(await operator(gw).task(created.id)))).toEqual([])
    expect(leaks(logged.join(""))).toEqual([])

    // The task is still there, its metadata emptied; a replay of the create answers it.
    const read = await tasks.getVideo(created.id)
    expect(read).toMatchObject({ id: created.id, status: "succeeded", metadata: {} })
    const replay = await tasks.createVideoReply(body(still!.url), { idempotencyKey: "plum-1" })
    expect(replay.replayed).toBe(true)
    expect(replay.task.id).toBe(created.id)
  })

  it("an OpenAI Videos upstream is asked to delete the finished video: DELETE /v1/videos/{id}, and it is gone", async () => {
    const acct = await createAccount(gw, { name: "private videos", wallet_credits: 100, group: "private" })
    const tasks = api(gw, acct)
    const created = await tasks.createVideo({ ...videoTask(`${PROMPT} (a relay)`), metadata: { order: SECRET } })
    expect((await tasks.waitTask("video", created.id)).at(-1)!.status).toBe("succeeded")
    // Looked up among every video made: under load the copy can be deleted before the poll above returns.
    const video = [...videos.created.values()].find((v) => v.prompt === `${PROMPT} (a relay)`)!
    await eventually(
      async () => (await operator(gw).task(created.id)).attempts.at(-1)!.provider_copy === "deleted",
      "the relay's copy deleted"
    )
    expect(videos.requests.filter((r) => r.method === "DELETE").map((r) => r.path)).toEqual([`/v1/videos/${video.id}`])
    expect(videos.videos.has(video.id)).toBe(false)
    expect((await operator(gw).task(created.id)).engine.redacted_at).not.toBeNull()
  })

  it("an account of a group that keeps requests keeps them", async () => {
    const acct = await createAccount(gw, { name: "keeps", wallet_credits: 100 })
    const tasks = api(gw, acct)
    const created = await tasks.createVideo({
      model: MODEL,
      operation: "generation",
      input: { prompt: `${PROMPT} (kept)` },
      output: { duration: 5 },
      metadata: { order: SECRET }
    })
    expect((await tasks.waitTask("video", created.id)).at(-1)!.status).toBe("succeeded")
    // Several sweeps later.
    await new Promise((r) => setTimeout(r, 2_500))
    const [row] = await query<{ request: string; redacted_at: number | null }>(
      gw,
      (sql) => sql`SELECT request::text AS request, redacted_at FROM tasks WHERE id = ${created.id}`
    )
    expect(row!.redacted_at).toBeNull()
    expect(row!.request).toContain(`${PROMPT} (kept)`)
    expect((await tasks.getVideo(created.id)).metadata).toEqual({ order: SECRET })
    expect((await operator(gw).task(created.id)).attempts.at(-1)!.provider_copy).toBeNull()
  })
})
