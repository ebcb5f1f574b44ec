import { rmSync } from "node:fs"
import { afterAll, afterEach, describe, expect, it } from "vitest"
import type { ImageTaskRequest, VideoTaskRequest } from "../../src/client/Tasks.ts"
import type { TaskKind } from "../../src/tasks/Task.ts"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { alsoWith, configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { rgbPixels } from "../support/images.ts"
import { type Installation, installation as newInstallation, withDatabase } from "../support/installation.ts"
import { probeBytes } from "../support/media.ts"
import { kill, type Service, stop } from "../support/process.ts"
import { videoRequest } from "../support/tasks.ts"

/**
 * Two gateways chained, each a real service process with its own database
 * (docs/adapters/gateway.md): B runs the sandbox and serves its results with
 * `url_auth: resource_api_key`; A routes a video and an image model to B
 * through a `gateway` channel whose credentials come from A's environment. A is
 * SIGKILLed while ten tasks wait upstream and restarted on its data: it polls
 * them to the end and submits none again. test/channels/channel-gateway.test.ts tells
 * the same story in one process.
 */

const VIDEO = "provy-famS-2.0-480p"
const IMAGE = "provx-image-1"
const CHANNEL = "peer"
const DEADLINE_MS = 120_000
const ENGINE = { poll_interval_ms: 200, heartbeat_s: 1, lease_s: 10, reaper_interval_s: 1, retry_base_ms: 50 }

const configs: Array<string> = []
const sites: Array<Installation> = []
const seen: Array<{ readonly name: string; readonly service: Service }> = []
afterEach(async (context) => {
  if (context.task.result?.state === "fail") {
    for (const { name, service } of seen) {
      const notable = service.output().split("\n").filter((l) => !l.includes("\"message\":\"request\"")).slice(-30)
      console.error(`--- ${name} (pid ${service.child.pid}) ---\n${notable.join("\n")}`)
    }
  }
  seen.length = 0
  await Promise.all(sites.splice(0).map((s) => s.close()))
})
afterAll(() => configs.forEach((dir) => rmSync(dir, { recursive: true, force: true })))

const site = async (name: string) => {
  const made = await newInstallation((service) => seen.push({ name, service }))
  sites.push(made)
  return made
}

const unthrottle = (limits: any) => {
  limits.engine = ENGINE
  for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.burst = rate.per_second = 100_000
}

/** B: the sandbox, ten renders at once, results behind B's resource key. */
const bConfig = () => {
  const dir = configWith("models.json", (models) => {
    models.channels.sandbox = { ...models.channels.sandbox, concurrency: 10, url_auth: "resource_api_key" }
  })
  configs.push(dir)
  return alsoWith(dir, "limits.json", unthrottle)
}

/**
 * A: both models through the `gateway` channel to B. The sandbox second only so A accepts
 * `provider_options.sandbox` (B's sandbox plays it). `poll_s` bounds how long a poll pass that the
 * kill interrupted keeps its tasks held (twice `poll_s`, UpstreamPoller.ts) before they are due again.
 */
const aConfig = (bUrl: string) => {
  const dir = configWith("models.json", (models) => {
    models.channels[CHANNEL] = {
      adapter: "gateway",
      base_url: bUrl,
      credentials: { model_token: { env: "PEER_SK" }, resource_key: { env: "PEER_AK" } },
      concurrency: 20,
      timeouts: { poll_s: 5 }
    }
    models.models[VIDEO].channels = [{ channel: CHANNEL, upstream_model: VIDEO }, "sandbox"]
    models.models[IMAGE].channels = [{ channel: CHANNEL, upstream_model: IMAGE }]
  })
  configs.push(dir)
  return alsoWith(dir, "limits.json", unthrottle)
}

/** B serving, A's account on B, and A serving with that account's keys; every process ROLE=all. */
const chain = async () => {
  const b = await site("B")
  await b.serve("all", bConfig())
  const peer = await createAccount(b.target, { name: "gateway-a", wallet_credits: 1000 })
  const a = await site("A")
  const config = aConfig(b.url)
  const options = { env: { PEER_SK: peer.model.key, PEER_AK: peer.resource.key } }
  const aService = await a.serve("all", config, options)
  return { a, b, peer, aService, startA: () => a.serve("all", config, options) }
}

/** A create through the typed client: the queued task (the answer must be the 202). */
const createVideo = (target: { url: string }, key: string, request: VideoTaskRequest) =>
  api(target, { model: key }).createVideo(request)
const createImage = (target: { url: string }, key: string, request: ImageTaskRequest) =>
  api(target, { model: key }).createImage(request)

/** What `read` gives once `done` holds for it; a deadline, not a speed measurement. */
const until = <A>(read: () => Promise<A>, done: (value: A) => boolean, what: string) =>
  eventually(
    async () => {
      const value = await read()
      return done(value) ? { value } : undefined
    },
    what,
    { deadlineMs: DEADLINE_MS, intervalMs: 200 }
  ).then(({ value }) => value)

const taskOf = <K extends TaskKind>(target: { url: string }, key: string, kind: K, id: string) =>
  api(target, { resource: key }).getTask(kind, id)
const finished = (task: { readonly status: string }) => task.status === "succeeded" || task.status === "failed"

/** B's tasks for A's account there, through B's own API (any backend, while B runs). */
const bTasks = async (b: Installation, peerKey: string, kind: "video" | "image") => {
  // A 200: the typed client decodes the contract's answer or fails.
  const caller = api(b.target, { resource: peerKey })
  const page = kind === "video" ? await caller.listVideos({ limit: 100 }) : await caller.listImages({ limit: 100 })
  return [...page.data]
}

const download = async (url: string) => {
  const response = await fetch(url)
  expect(response.status).toBe(200)
  return new Uint8Array(await response.arrayBuffer())
}

describe(`two gateways chained as processes (${backend})`, { timeout: 240_000 }, () => {
  it("a video and an image task on A run on B; A serves them as its own, and they play", async () => {
    const { a, b, peer } = await chain()
    const acct = await createAccount(a.target, { name: "caller", wallet_credits: 100 })
    const imageRequest = {
      model: IMAGE,
      operation: "generation",
      input: { prompt: "a lighthouse" },
      output: { size: "1536x1024", format: "png", count: 1 }
    } as const
    const created = [
      await createVideo(a.target, acct.model.key, videoRequest()),
      await createImage(a.target, acct.model.key, imageRequest)
    ] as const
    const [video, image] = await Promise.all([
      until(() => taskOf(a.target, acct.resource.key, "video", created[0].id), finished, "a finished video"),
      until(() => taskOf(a.target, acct.resource.key, "image", created[1].id), finished, "a finished image")
    ])
    const videoItem = video.result!.videos[0]!
    const imageItem = image.result!.images[0]!
    expect([video.status, image.status]).toEqual(["succeeded", "succeeded"])

    // The MP4, downloaded from A's own URL, has a video stream of the task's duration.
    expect(videoItem.url.startsWith(`${a.url}/`)).toBe(true)
    const probed = await probeBytes(await download(videoItem.url))
    expect(probed.formatName).toContain("mp4")
    expect(probed.video?.codec).toBe("h264")
    expect(Math.abs(probed.durationS - videoRequest().output.duration)).toBeLessThan(0.1)
    expect(videoItem.duration_ms).toBe(videoRequest().output.duration * 1000)

    // The image, from A's own URL, decodes to the requested size.
    expect(imageItem.url.startsWith(`${a.url}/`)).toBe(true)
    const png = await download(imageItem.url)
    expect((await probeBytes(png)).video).toMatchObject({ codec: "png", width: 1536, height: 1024 })
    expect((await rgbPixels(png)).length).toBe(1536 * 1024 * 3)

    // B holds one task for each, keyed by A's task id; none of B shows in A's task objects.
    const held = [...await bTasks(b, peer.resource.key, "video"), ...await bTasks(b, peer.resource.key, "image")]
    expect(held.map((t) => [t.client_reference_id, t.status])).toEqual([
      [video.id, "succeeded"],
      [image.id, "succeeded"]
    ])
    const listed = await api(a.target, acct).listVideos()
    const text = JSON.stringify([created, video, image, listed])
    for (const t of held) expect(text).not.toContain(t.id)
    expect(text).not.toContain(b.url)
    expect(text).not.toContain(CHANNEL)
  })

  it("SIGKILL of A with 10 tasks waiting on B: restarted, A finishes all, B ran each once, each charged once", async () => {
    const { a, b, peer, aService, startA } = await chain()
    const accounts = await Promise.all(
      ["one", "two"].map((name) => createAccount(a.target, { name, wallet_credits: 100 }))
    )
    // Slow on B (all ten render at once there), so every one is still running upstream at the kill.
    const slow = videoRequest({ provider_options: { sandbox: { delay_ms: 10_000 } } })
    const ids = await Promise.all(Array.from({ length: 10 }, async (_, i) => {
      const task = await createVideo(a.target, accounts[i % 2]!.model.key, slow)
      return { id: task.id, acct: accounts[i % 2]! }
    }))

    // Every task submitted: A holds it `waiting` (no lease, no fiber), as A's operator view shows.
    const views = await until(
      () => Promise.all(ids.map(({ id }) => operator(a.target).task(id))),
      (all) => all.every((v) => v.engine?.run_state === "waiting"),
      "all ten waiting upstream"
    )
    expect(views.every((v) => v.engine.lease_owner === null && v.engine.channel === CHANNEL)).toBe(true)
    const before = await bTasks(b, peer.resource.key, "video")
    expect(before).toHaveLength(10)
    expect(before.filter(finished)).toEqual([])

    await kill(aService)
    expect(aService.child.signalCode).toBe("SIGKILL")
    await startA()

    const done = await until(
      () => Promise.all(ids.map(({ acct, id }) => taskOf(a.target, acct.resource.key, "video", id))),
      (all) => all.every(finished),
      "all ten finished on A"
    )
    expect(done.map((t) => t.status)).toEqual(ids.map(() => "succeeded"))

    // B, through its API: still exactly the ten tasks, one per A task; A's account there charged
    // ten times (a credit and ten charges in its ledger) and refunded nothing.
    const after = await bTasks(b, peer.resource.key, "video")
    expect(new Set(after.map((t) => t.id))).toEqual(new Set(before.map((t) => t.id)))
    expect(after.map((t) => t.client_reference_id).sort()).toEqual(ids.map((t) => t.id).sort())
    const onB = await operator(b.target).account(peer.id)
    expect(onB.ledger).toMatchObject({ entries: 11, refunded: 0 })

    // Both databases, read from outside once their processes stopped (PGlite's files are one process's).
    await Promise.all(seen.map(({ service }) => stop(service)))
    const aRows = await withDatabase({ dbUrl: a.db.url, dataDir: a.dataDir }, async (rows) => ({
      tasks: await rows(`SELECT id, account_id, upstream_id FROM tasks`),
      ledger: await rows(`SELECT account_id, task_id, kind FROM ledger WHERE kind <> 'credit'`)
    }))
    const bRows = await withDatabase({ dbUrl: b.db.url, dataDir: b.dataDir }, async (rows) => ({
      tasks: await rows(`SELECT id, idempotency_key FROM tasks WHERE account_id = $1`, [peer.id]),
      ledger: await rows(`SELECT task_id, kind FROM ledger WHERE account_id = $1 AND kind <> 'credit'`, [peer.id])
    }))

    // On A: each account charged once per task of its own, nothing refunded.
    expect(aRows.ledger.filter((l) => l.kind !== "charge")).toEqual([])
    for (const { id, acct } of ids) {
      expect(aRows.ledger.filter((l) => l.task_id === id), id).toEqual([
        { account_id: acct.id, task_id: id, kind: "charge" }
      ])
    }
    // On B: ten tasks, each keyed by one A task (A's upstream id for it), each charged once.
    expect(bRows.tasks).toHaveLength(10)
    const upstreamOf = new Map(aRows.tasks.map((t) => [t.id, t.upstream_id]))
    for (const t of bRows.tasks) expect(upstreamOf.get(t.idempotency_key)).toBe(t.id)
    expect(bRows.ledger.map((l) => l.kind)).toEqual(Array(10).fill("charge"))
    expect(new Set(bRows.ledger.map((l) => l.task_id))).toEqual(new Set(bRows.tasks.map((t) => t.id)))
  })
})
