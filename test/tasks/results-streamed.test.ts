import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import type { ImageTaskRequest, VideoTaskRequest } from "../../src/client/Tasks.ts"
import { MAX_RESULT_BYTES } from "../../src/tasks/engine/FetchResults.ts"
import type { VideoTask } from "../../src/tasks/Task.ts"
import { type FakeGateway, startFakeGateway } from "../fakes/gateway.ts"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { alsoWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { fakeGatewayConfig, IMAGE, MODEL_TOKEN, RESOURCE_KEY, SHORT, videoTask } from "../support/fakeGateway.ts"
import { type Installation, installation } from "../support/installation.ts"
import { type Service, stop } from "../support/process.ts"
import { startS3rver } from "../support/s3rver.ts"

/**
 * Results re-hosted from an upstream are streamed: downloaded to a temporary
 * file (counted against MAX_RESULT_BYTES as they arrive), inspected there
 * and streamed into the object store, never whole in memory. Proven on the
 * service as a real process, so its memory is its own: a 300 MB result
 * leaves its peak RSS far below 300 MB more than before; its temporary
 * directory (TMPDIR, owned by this test) is empty after every task,
 * whether the result was stored, too large, its download timed out and was
 * tried again, or the service was stopped mid-download. Once with the local
 * store, once with S3 (s3rver), where the body is piped into the PUT.
 */

const MB = 1024 * 1024
const BIG = 300 * MB

let fake: FakeGateway
let configDir: string
/** The service under test: a process on its own installation, with a TMPDIR of this test's. */
let inst: Installation
let service: Service
let temp: string
const closing: Array<() => Promise<void> | void> = []

/** Starts a service (ROLE=all) on a fresh installation with `env`, and makes it the one under test. */
const launch = async (env: Record<string, string> = {}) => {
  temp = mkdtempSync(join(tmpdir(), "gw-stream-tmpdir-"))
  inst = await installation()
  const dir = temp
  const mine = inst
  closing.push(() => mine.close(), () => rmSync(dir, { recursive: true, force: true }))
  service = await inst.serve("all", configDir, {
    env: { TMPDIR: temp, UPGW_SK: MODEL_TOKEN, UPGW_AK: RESOURCE_KEY, ...env }
  })
}

beforeAll(async () => {
  fake = await startFakeGateway({ modelToken: MODEL_TOKEN, resourceKey: RESOURCE_KEY })
  // Downloads that hang end quickly on `upgw-quick` (SHORT), so a retried download is seen within a test.
  configDir = fakeGatewayConfig(fake, { submit_s: 5, poll_s: 5, download_s: 120 }, {
    name: "upgw-quick",
    timeouts: { download_s: 2 }
  })
  alsoWith(configDir, "limits.json", (limits) => {
    limits.engine = { poll_interval_ms: 200, heartbeat_s: 1, lease_s: 10, retry_base_ms: 50, generate_retries: 2 }
    for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.burst = rate.per_second = 10_000
  })
}, 120_000)

afterAll(async () => {
  for (const close of closing.reverse()) await close()
  await fake?.close()
  rmSync(configDir, { recursive: true, force: true })
})

afterEach((context) => {
  if (context.task.result?.state === "fail") {
    console.error(
      service.output().split("\n").filter((l) => !l.includes("\"message\":\"request\"")).slice(-40).join("\n")
    )
  }
})

/** The service's resident memory now and at its peak so far, in bytes (Linux: /proc/<pid>/status). */
const memory = () => {
  const status = readFileSync(`/proc/${service.child.pid}/status`, "utf8")
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, "m").exec(status)![1]) * 1024
  return { rss: kib("VmRSS"), peak: kib("VmHWM") }
}

const balanceOf = async (accountId: string) => (await operator(inst.target).account(accountId)).wallet_credits

/** Creates a task and polls it to its end. */
const runToEnd = async (
  request: { kind: "video"; body: VideoTaskRequest } | { kind: "image"; body: ImageTaskRequest }
) => {
  const acct = await createAccount(inst.target, { name: "streamer", wallet_credits: 100 })
  const tasks = api(inst.target, acct)
  const created = request.kind === "video"
    ? await tasks.createVideo(request.body)
    : await tasks.createImage(request.body)
  const seen = await tasks.waitTask(request.kind, created.id, undefined, { deadlineMs: 150_000, intervalMs: 200 })
  return { acct, task: seen.at(-1)! }
}
const runVideo = (body: VideoTaskRequest) => runToEnd({ kind: "video", body })

/** A 300 MB result through the service under test: stored whole, its peak memory far below that. */
const largeResult = async () => {
  // A small result first, so what every task allocates once (its code paths, pools) is in the baseline.
  expect((await runVideo(videoTask("a warm-up result"))).task.status).toBe("succeeded")
  const before = memory()

  const prompt = `a large result ${service.child.pid}`
  fake.lives.push({ prompt, padBytes: BIG })
  const { task } = await runVideo(videoTask(prompt))
  const after = memory()
  expect(task.status).toBe("succeeded")
  const video = (task as VideoTask).result!.videos[0]!
  expect(video.mime_type).toBe("video/mp4")

  // The caller gets every byte back from our store.
  const content = await fetch(video.url)
  expect(content.status).toBe(200)
  let size = 0
  const reader = content.body!.getReader()
  for (let read = await reader.read(); !read.done; read = await reader.read()) size += read.value.byteLength
  expect(size).toBeGreaterThan(BIG)
  expect(Number(content.headers.get("content-length"))).toBe(size)

  const grown = after.peak - before.peak
  console.info(
    `service RSS: before ${(before.rss / MB).toFixed(0)} MB (peak ${(before.peak / MB).toFixed(0)} MB), ` +
      `after ${(after.rss / MB).toFixed(0)} MB (peak ${(after.peak / MB).toFixed(0)} MB): ` +
      `peak grew ${(grown / MB).toFixed(0)} MB for a ${(size / MB).toFixed(0)} MB result`
  )
  // Held in memory, the result alone would raise the peak by 300 MB (twice that while its chunks were joined).
  expect(grown).toBeLessThan(100 * MB)
  expect(readdirSync(temp)).toEqual([])
}

describe(`results are re-hosted as streams (${backend})`, () => {
  it("a 300 MB video is stored whole while the service's peak memory grows by far less than its size", async () => {
    await launch()
    await largeResult()
  }, 420_000)

  it("a result over the cap fails the task with its refund, and its partial file is removed", async () => {
    fake.lives.push({ prompt: "an image too large", padBytes: MAX_RESULT_BYTES.image })
    const { acct, task } = await runToEnd({
      kind: "image",
      body: {
        model: IMAGE,
        operation: "generation",
        input: { prompt: "an image too large" },
        output: { size: "1024x1024", format: "png", count: 1 }
      }
    })
    expect(task.status).toBe("failed")
    expect(task.error?.retryable).toBe(true)
    expect(await balanceOf(acct.id)).toBe(100)
    expect(readdirSync(temp)).toEqual([])
  }, 120_000)

  it("a download that times out is tried again; no temporary file outlives either attempt", async () => {
    fake.faults.content.push({ kind: "hang" })
    const { task } = await runVideo(videoTask("a result that hangs once", SHORT))
    expect(task.status).toBe("succeeded")
    const downloads = fake.requests.filter((r) => r.method === "GET" && r.path.includes("/assets/"))
    expect(downloads.length).toBeGreaterThanOrEqual(2)
    expect(readdirSync(temp)).toEqual([])
  }, 120_000)

  it("a download interrupted by a shutdown leaves no temporary file", async () => {
    fake.faults.content.push({ kind: "hang" })
    const acct = await createAccount(inst.target, { name: "stopped", wallet_credits: 100 })
    await api(inst.target, acct).createVideo(videoTask("a result that hangs until the shutdown"))
    // The download's file exists as soon as the download starts, before the upstream answers.
    await eventually(() => readdirSync(temp).length > 0, "the download's file exists", { deadlineMs: 60_000 })
    await stop(service)
    expect(readdirSync(temp)).toEqual([])
  }, 120_000)
})

describe(`results are re-hosted as streams into S3 (${backend})`, () => {
  it("a 300 MB video is streamed into the bucket while the service's peak memory grows by far less", async () => {
    const s3 = await startS3rver("gw-stream-bucket")
    closing.push(() => s3.close())
    await launch(s3.env)
    await largeResult()
  }, 420_000)
})
