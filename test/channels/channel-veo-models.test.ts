import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { adminApi, operator } from "../support/adminApi.ts"
import { backend } from "../support/database.ts"
import { ledgerOf } from "../support/tasks.ts"
import {
  engineRow,
  expectNothingUpstream,
  expectRefunded,
  runVeo,
  startVeoGateway,
  type VeoSetup,
  VERTEX_MODEL
} from "../support/veo.ts"

/**
 * The `veo` adapter against models Google no longer serves
 * (docs/adapters/veo.md, Models, Failures, Check): the fake answers a create
 * or a model read naming a model outside its served set with Google's 404
 * NOT_FOUND, as the Gemini API does for the Veo 3.0 ids (shut down 30 June
 * 2026) and the Veo 3.1 previews (shut down 22 October 2026).
 * - a create meeting that 404 is the route's configuration: not retried on
 *   the channel, the task moved to the model's next channel at once, or failed
 *   with its refund when there is none; Google's words reach operators only;
 * - the channel check asks Google about each of the channel's `check_models`
 *   and names those it does not serve as `model_not_found_upstream`.
 */

const STD = "provx-famV-3.1-standard-720p"
const FAST = "provx-famV-3.1-fast-720p"
const RETIRED_IN_JUNE = "veo-3.0-generate-001"
const PREVIEW = "veo-3.1-fast-generate-preview"

let veo: VeoSetup

beforeAll(async () => {
  veo = await startVeoGateway({
    // Each route on a channel of its own: a refusal not taken trips that channel's breaker.
    [STD]: [{ channel: "gemini-gone", upstream_model: RETIRED_IN_JUNE }],
    [FAST]: [
      { channel: "gemini-preview", upstream_model: PREVIEW },
      { channel: "vertex", upstream_model: "veo-3.1-fast-generate-001" }
    ]
  }, {
    "gemini-gone": { like: "gemini" },
    "gemini-preview": { like: "gemini" },
    "gemini-current": { like: "gemini", check_models: ["veo-3.1-generate-preview", PREVIEW] },
    "gemini-stale": {
      like: "gemini",
      check_models: ["veo-3.1-generate-preview", RETIRED_IN_JUNE, "veo-9-nonexistent"]
    },
    "gemini-stale-wrong-key": {
      like: "gemini",
      check_models: [RETIRED_IN_JUNE],
      credentials: { api_key: { env: "GEMINI_WRONG_KEY" } }
    },
    "vertex-current": { like: "vertex", check_models: [VERTEX_MODEL, "veo-3.1-fast-generate-001"] },
    "vertex-stale": { like: "vertex", check_models: [VERTEX_MODEL, "veo-3.0-fast-generate-001"] }
  })
}, 60_000)
afterAll(async () => {
  await veo?.close()
})

const check = (name: string) => adminApi(veo.gw)((c) => c.adminChannels.checkChannel({ path: { name } }))

describe(`the veo channel and models Google does not serve (${backend})`, () => {
  it("a create naming a retired model (404 NOT_FOUND) fails at once, not retried, refunded; Google's words to operators only", async () => {
    const { creates, task } = await runVeo(veo, {
      model: STD,
      operation: "generation",
      input: { prompt: "a lighthouse from last year" },
      output: { duration: 8 }
    })
    // One create: a model that is not there is not asked for again.
    expect(creates).toHaveLength(1)
    expect(creates[0]!.path).toBe(`/v1beta/models/${RETIRED_IN_JUNE}:predictLongRunning`)
    expect(task).toMatchObject({
      status: "failed",
      error: {
        code: "video_task_failed",
        message: "This model is not available from the video service at the moment.",
        retryable: false
      }
    })
    await expectRefunded(veo.gw, task.id)
    expectNothingUpstream(veo.fake, task)
    expect(JSON.stringify(task)).not.toMatch(/NOT_FOUND|predictLongRunning|v1beta|404/)
    expect((await engineRow(veo.gw, task.id)).upstream_id).toBe(null)

    const view = await operator(veo.gw).task(task.id)
    expect(view.attempts).toHaveLength(1)
    expect(view.attempts[0]).toMatchObject({
      channel: "gemini-gone",
      outcome: "refused",
      upstream: {
        status: 404,
        code: "NOT_FOUND",
        message: expect.stringContaining(
          `models/${RETIRED_IN_JUNE} is not found for API version v1beta, or is not supported for predictLongRunning`
        )
      }
    })
    // What the adapter knows of the id rides along for the operator.
    expect(view.attempts[0]!.upstream!.message).toContain("retired by Google on 2026-06-30")
  })

  it("the Veo 3.1 preview shut down (22 October 2026): the task moves to the model's next channel, one video made", async () => {
    veo.fake.models.gemini.delete(PREVIEW)
    try {
      const { creates, task } = await runVeo(veo, {
        model: FAST,
        operation: "generation",
        input: { prompt: "after the shutdown" },
        output: { duration: 8 }
      })
      expect(task.status).toBe("succeeded")
      // The refused create on Gemini, then exactly one on Vertex: nothing retried on the channel that refused.
      expect(creates.map((c) => c.path)).toEqual([
        `/v1beta/models/${PREVIEW}:predictLongRunning`,
        "/v1/projects/test-project/locations/us-central1/publishers/google/models/veo-3.1-fast-generate-001:predictLongRunning"
      ])
      expect(await engineRow(veo.gw, task.id)).toMatchObject({ channel: "vertex" })
      expect((await ledgerOf(veo.gw, task.id)).map((l) => l.kind)).toEqual(["charge"])
      const view = await operator(veo.gw).task(task.id)
      expect(view.attempts).toMatchObject([
        {
          channel: "gemini-preview",
          outcome: "failover",
          upstream: { status: 404, code: "NOT_FOUND", message: expect.stringContaining("gemini-omni-1.1-flash") }
        },
        { channel: "vertex", outcome: "succeeded" }
      ])
      expectNothingUpstream(veo.fake, task)
    } finally {
      veo.fake.models.gemini.add(PREVIEW)
    }
  })

  it("check, Gemini: each of check_models read by id; all served is ok", async () => {
    const before = veo.fake.requests.length
    const reply = await check("gemini-current")
    expect(reply, reply.detail).toMatchObject({ ok: true, result: "ok" })
    expect(reply.detail).toContain("models served: veo-3.1-generate-preview, veo-3.1-fast-generate-preview")
    const asked = veo.fake.requests.slice(before).map((r) => `${r.method} ${r.path}`)
    expect(asked).toEqual([
      "GET /v1beta/models",
      "GET /v1beta/models/veo-3.1-generate-preview",
      `GET /v1beta/models/${PREVIEW}`
    ])
    expect(veo.fake.requests.slice(before).every((r) => r.headers["x-goog-api-key"] !== undefined)).toBe(true)
  })

  it("check, Gemini: a retired and an unknown model are model_not_found_upstream, with Google's words", async () => {
    const before = veo.fake.requests.length
    const reply = await check("gemini-stale")
    expect(reply).toMatchObject({ ok: false, result: "model_not_found_upstream" })
    expect(reply.detail).toMatch(/^model_not_found_upstream: /)
    expect(reply.detail).toContain(`${RETIRED_IN_JUNE} (retired by Google on 2026-06-30`)
    expect(reply.detail).toContain(
      `GET /models/${RETIRED_IN_JUNE}: HTTP 404 NOT_FOUND: models/${RETIRED_IN_JUNE} is not found for API version v1beta`
    )
    expect(reply.detail).toContain("veo-9-nonexistent (not a model this API serves")
    // The served one is not among them.
    expect(reply.detail).not.toContain("veo-3.1-generate-preview (")
    expect(reply.detail).not.toMatch(/AIzaSy/)
    // Nothing created.
    expect(veo.fake.requests.slice(before).some((r) => r.path.endsWith(":predictLongRunning"))).toBe(false)
  })

  it("check: the models the channel's routes name are asked about without check_models", async () => {
    const before = veo.fake.requests.length
    const reply = await check("gemini-gone")
    expect(reply).toMatchObject({ ok: false, result: "model_not_found_upstream" })
    expect(reply.detail).toContain(`${RETIRED_IN_JUNE} (retired by Google on 2026-06-30`)
    expect(veo.fake.requests.slice(before).map((r) => r.path)).toEqual([
      "/v1beta/models",
      `/v1beta/models/${RETIRED_IN_JUNE}`
    ])
  })

  it("check: a wrong key is credentials_refused before any model is asked about", async () => {
    const before = veo.fake.requests.length
    expect(await check("gemini-stale-wrong-key")).toMatchObject({ ok: false, result: "credentials_refused" })
    expect(veo.fake.requests.slice(before).map((r) => r.path)).toEqual(["/v1beta/models"])
  })

  it("check, Vertex: publisher models read by id with the minted token; a retired one is model_not_found_upstream", async () => {
    const ok = await check("vertex-current")
    expect(ok, ok.detail).toMatchObject({ ok: true, result: "ok" })
    const before = veo.fake.requests.length
    const stale = await check("vertex-stale")
    expect(stale).toMatchObject({ ok: false, result: "model_not_found_upstream" })
    expect(stale.detail).toMatch(
      /^model_not_found_upstream: veo-3\.0-fast-generate-001 \(retired by Google on 2026-06-30/
    )
    expect(stale.detail).toContain("veo-3.1-fast-generate-001 in its place")
    const reads = veo.fake.requests.slice(before).filter((r) => r.path.startsWith("/v1/publishers/google/models/"))
    expect(reads.map((r) => r.path)).toEqual([
      `/v1/publishers/google/models/${VERTEX_MODEL}`,
      "/v1/publishers/google/models/veo-3.0-fast-generate-001"
    ])
    expect(reads.every((r) => String(r.headers.authorization).startsWith("Bearer ya29."))).toBe(true)
  })
})
