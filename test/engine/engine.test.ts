import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { InMemorySpanExporter, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import { Schema } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { VideoTaskRequest } from "../../src/client/Tasks.ts"
import { VideoTask } from "../../src/tasks/Task.ts"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { raw } from "../support/http.ts"
import { probeBytes } from "../support/media.ts"
import { eventsOf, lastSeen, ledgerOf, pollTask, resultOf, videoRequest } from "../support/tasks.ts"

/**
 * The task engine in-process (ROLE=all): real claims, the sandbox's real
 * ffmpeg renders, the local object store, and the outcomes as a caller sees
 * them over HTTP. Files are checked by parsing them, not by the service's fields.
 */

const exporter = new InMemorySpanExporter()
let gw: TestGateway
beforeAll(async () => {
  const config = configWith("limits.json", (limits) => {
    limits.engine = { poll_interval_ms: 200, heartbeat_s: 1, lease_s: 10 }
  })
  gw = await startGateway(
    { ROLE: "all", CONFIG_DIR: config },
    NodeSdk.layer(() => ({
      resource: { serviceName: "engine-test" },
      spanProcessor: new SimpleSpanProcessor(exporter)
    }))
  )
})
afterAll(() => gw?.close())

const create = (key: string, request: VideoTaskRequest) => api(gw, { model: key }).createVideo(request)

/** A create carrying a `traceparent` of the test's own (a header the typed client does not send), over the wire. */
const createTraced = async (key: string, request: VideoTaskRequest, traceparent: string) => {
  const reply = await raw(gw, "POST", "/v1/video/tasks", { key, json: request, headers: { traceparent } })
  if (reply.status !== 202) throw new Error(`create: ${reply.status} ${JSON.stringify(reply.body)}`)
  return Schema.decodeUnknownSync(VideoTask)(reply.body)
}

describe(`task engine (${backend})`, () => {
  const families = [
    { model: "provy-famS-2.0-480p", duration: 4, ratio: "16:9", audio: true, width: 854, height: 480 },
    { model: "provx-famV-3.1-fast-720p", duration: 4, ratio: "9:16", audio: false, width: 720, height: 1280 },
    { model: "provx-famK-3.0-720p", duration: 3, ratio: "16:9", audio: true, width: 1280, height: 720 }
  ]

  it.each(families)("$model: renders a real H.264 MP4 of the requested shape", async (f) => {
    const acct = await createAccount(gw, { name: f.model, wallet_credits: 100 })
    const task = await create(
      acct.model.key,
      videoRequest({
        model: f.model,
        input: { prompt: `a lighthouse at dusk for ${f.model}` },
        output: { duration: f.duration, aspect_ratio: f.ratio, generate_audio: f.audio }
      })
    )
    const done = lastSeen(await pollTask(gw, acct.resource.key, task.id))
    expect(done).toMatchObject({ status: "succeeded", progress: 100, error: null })
    expect(done.started_at).toBeGreaterThanOrEqual(done.created_at)
    if (done.started_at === null) throw new Error(`task ${done.id} ended without started_at`)
    expect(done.completed_at).toBeGreaterThanOrEqual(done.started_at)
    expect(done.updated_at).toBe(done.completed_at)

    const { videos } = resultOf(done)
    expect(videos).toHaveLength(1)
    const item = videos[0]
    expect(Object.keys(item).sort()).toEqual([
      "asset_id",
      "duration_ms",
      "filename",
      "height",
      "index",
      "mime_type",
      "temporary",
      "url",
      "url_auth",
      "width"
    ])
    expect(item).toMatchObject({
      index: 0,
      mime_type: "video/mp4",
      duration_ms: f.duration * 1000,
      width: f.width,
      height: f.height,
      temporary: true,
      url_auth: "none"
    })

    // url_auth none: the URL alone, query string intact, no key.
    const download = await fetch(item.url)
    expect(download.status).toBe(200)
    expect(download.headers.get("content-type")).toBe("video/mp4")
    const media = await probeBytes(new Uint8Array(await download.arrayBuffer()))
    expect(media.formatName).toContain("mp4")
    expect(media.video).toMatchObject({ codec: "h264", width: f.width, height: f.height, pixFmt: "yuv420p" })
    expect(Math.abs(media.durationS - f.duration)).toBeLessThan(0.1)
    expect(media.audio?.codec).toBe(f.audio ? "aac" : undefined)

    // Without its signature the same object is refused.
    const unsigned = await fetch(item.url.split("?")[0])
    expect(unsigned.status).toBeGreaterThanOrEqual(400)
  })

  it("moves queued → in_progress (started_at set, progress rising) → succeeded, and writes one event", async () => {
    const acct = await createAccount(gw, { name: "states", wallet_credits: 100 })
    const task = await create(acct.model.key, videoRequest({ provider_options: { sandbox: { delay_ms: 2000 } } }))
    expect(task).toMatchObject({ status: "queued", progress: 0, started_at: null, completed_at: null })

    const seen = await pollTask(gw, acct.resource.key, task.id, undefined, { intervalMs: 50 })
    const running = seen.filter((t) => t.status === "in_progress")
    expect(running.length).toBeGreaterThan(0)
    for (const t of running) {
      expect(t.started_at).not.toBeNull()
      expect(t.completed_at).toBeNull()
      expect(t.result).toBeNull()
      expect(t.progress).toBeGreaterThanOrEqual(0)
      expect(t.progress).toBeLessThan(100)
    }
    expect(new Set(running.map((t) => t.progress)).size).toBeGreaterThan(1)
    const progress = seen.map((t) => t.progress)
    expect(progress).toEqual([...progress].sort((a, b) => a - b))
    const last = lastSeen(seen)
    expect(last.status).toBe("succeeded")

    const events = await eventsOf(gw, task.id)
    expect(events).toHaveLength(1)
    expect(events[0]!.type).toBe("video.task.succeeded")
    expect(events[0]!.payload).toMatchObject({ id: events[0]!.id, object: "event", api_version: "2026-07-17" })
    expect(events[0]!.payload.data.object).toEqual(last)
  })

  it("a failed task carries its error, is refunded exactly once, and writes a failed event", async () => {
    const acct = await createAccount(gw, { name: "fails", wallet_credits: 10 })
    const task = await create(acct.model.key, videoRequest({ provider_options: { sandbox: { outcome: "fail" } } }))
    const done = lastSeen(await pollTask(gw, acct.resource.key, task.id))
    expect(done).toMatchObject({ status: "failed", result: null })
    expect(done.error).toEqual({ code: "video_task_failed", message: expect.any(String), retryable: false })
    expect(done.completed_at).not.toBeNull()

    const ledger = await ledgerOf(gw, task.id)
    expect(ledger.map((l) => l.kind)).toEqual(["charge", "refund"])
    expect(ledger[0]!.wallet_micros + ledger[1]!.wallet_micros).toBe(0)
    expect(ledger[0]!.wallet_micros).toBeLessThan(0)
    const account = await operator(gw).account(acct.id)
    expect(account.wallet_credits).toBe(10)

    const events = await eventsOf(gw, task.id)
    expect(events.map((e) => e.type)).toEqual(["video.task.failed"])
    expect(events[0]!.payload.data.object).toEqual(done)
  })

  it("one trace from the create request to the terminal state, with claim, generate and store spans", async () => {
    const acct = await createAccount(gw, { name: "traced", wallet_credits: 100 })
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736"
    exporter.reset()
    const task = await createTraced(acct.model.key, videoRequest(), `00-${traceId}-00f067aa0ba902b7-01`)
    await pollTask(gw, acct.resource.key, task.id)
    // The run span ends just after the terminal write the poll saw.
    const spans = await eventually(
      () => {
        const traced = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId)
        return traced.some((s) => s.name === "task.run") && traced
      },
      "the run span ended",
      { deadlineMs: 5_000 }
    )
    const names = spans.map((s) => s.name)
    for (const name of ["TaskStore.create", "task.run", "task.claim", "task.generate", "task.store", "task.succeed"]) {
      expect(names).toContain(name)
    }
    const run = spans.find((s) => s.name === "task.run")!
    expect(run.attributes).toMatchObject({
      "task.id": task.id,
      "task.model": "provy-famS-2.0-480p",
      "account.id": acct.id
    })
    const ids = new Set(spans.map((s) => s.spanContext().spanId))
    expect(ids.has(run.parentSpanContext?.spanId ?? (run as any).parentSpanId)).toBe(true)
    for (const child of ["task.claim", "task.generate", "task.store", "task.succeed"]) {
      const span = spans.find((s) => s.name === child)!
      expect(span.parentSpanContext?.spanId ?? (span as any).parentSpanId).toBe(run.spanContext().spanId)
    }
  })
})
