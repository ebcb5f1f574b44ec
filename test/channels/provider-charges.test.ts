// Runs once: no database
import { describe, expect, it } from "vitest"
import { chargeOf as arkCharge, listedOf as arkListed } from "../../channels/ark/States.ts"
import { listedOf as falListed } from "../../channels/fal/States.ts"
import { stateOf as gatewayState } from "../../channels/gateway/States.ts"
import { currentStateOf, legacyStateOf } from "../../channels/kling/States.ts"
import { readImages } from "../../channels/openai-images/Answers.ts"
import { stateOf as videosState } from "../../channels/openai-videos/States.ts"
import { failuresFor } from "../../channels/replicate/Failures.ts"
import { chargeOf as replicateCharge, stateOf as replicateState } from "../../channels/replicate/States.ts"
import { stateOf as veoState } from "../../channels/veo/States.ts"
import type { UpstreamState } from "../../src/channel/contract/Upstream.ts"

/**
 * What each adapter reads its provider's charge from (docs/adapters/*.md,
 * Usage and billing), for the answers a task rarely ends with: whether a
 * failed, cancelled, aborted, filtered or empty task is billed, and the
 * usage each answer counts. The common paths run end to end in
 * upstream-cost.test.ts.
 */

/** The charge part of a finished state. */
const charge = (state: UpstreamState) =>
  state._tag === "Succeeded" || state._tag === "Failed"
    ? { tag: state._tag, billed: state.billed, usage: state.usage }
    : { tag: state._tag }

describe("what a provider charges, as its adapter reads it", () => {
  it("ark: the tokens of a succeeded task; a failed, expired or cancelled one is not billed", () => {
    const usage = { completion_tokens: 108_900, total_tokens: 108_900 }
    expect(arkCharge({ status: "succeeded", usage })).toEqual({
      usage: { unit: "token", quantity: 108_900, fields: usage },
      billed: true
    })
    for (const status of ["failed", "expired", "cancelled"]) {
      expect(arkCharge({ status, error: { code: "X" } })).toEqual({ usage: undefined, billed: false })
    }
    // A failure that counts tokens all the same is billed for them.
    expect(arkCharge({ status: "failed", usage: { completion_tokens: 500 } }).billed).toBe(true)
    expect(arkCharge({ status: "running" })).toEqual({})
    expect(arkListed({ items: [{ id: "cgt-1", status: "queued", created_at: 1_800_000_000, model: "m" }], total: 1 }))
      .toEqual({
        tasks: [{ upstreamId: "cgt-1", createdAt: 1_800_000_000_000, model: "m", status: "queued" }],
        total: 1
      })
  })

  it("replicate: predict_time for a model priced by time, none for an official one; billed once it ran, never aborted", () => {
    const ran = { started_at: "2026-11-28T10:00:00Z", metrics: { predict_time: 7.5 } }
    expect(replicateCharge({ status: "succeeded", version: "abc", ...ran })).toEqual({
      usage: { unit: "second", quantity: 7.5, fields: { predict_time: 7.5 } },
      billed: true
    })
    expect(replicateCharge({ status: "succeeded", version: "hidden", ...ran })).toEqual({
      usage: undefined,
      billed: true
    })
    expect(replicateCharge({ status: "failed", version: "abc", ...ran }).billed).toBe(true)
    expect(replicateCharge({ status: "canceled", version: "abc", ...ran }).billed).toBe(true)
    expect(replicateCharge({ status: "canceled", version: "abc", started_at: null }).billed).toBe(false)
    expect(replicateCharge({ status: "failed", started_at: null }).billed).toBe(false)
    expect(replicateCharge({ status: "aborted", started_at: null }).billed).toBe(false)
    const f = failuresFor("video")
    expect(charge(replicateState(f, { status: "aborted", version: "abc", started_at: null, metrics: {} }))).toEqual({
      tag: "Failed",
      billed: false,
      usage: undefined
    })
  })

  it("fal's history: a request that ended 2xx is billed, one that ended otherwise is not, one running says nothing", () => {
    const item = { request_id: "r1", endpoint_id: "fal-ai/veo3.1/image-to-video", sent_at: "2026-11-28T10:00:00Z" }
    expect(falListed({ ...item, status_code: 200, ended_at: "2026-11-28T10:01:00Z" })).toEqual({
      upstreamId: "fal-ai/veo3.1/requests/r1",
      createdAt: Date.parse(item.sent_at),
      model: "fal-ai/veo3.1/image-to-video",
      status: "200",
      billed: true
    })
    expect(falListed({ ...item, status_code: 422, ended_at: "2026-11-28T10:01:00Z" })?.billed).toBe(false)
    expect(falListed({ ...item, status_code: null, ended_at: null })).not.toHaveProperty("billed")
  })

  it("kling: the seconds of its videos; a failure billed only where units were deducted", () => {
    expect(charge(legacyStateOf({
      task_status: "succeed",
      final_unit_deduction: "5",
      task_result: { videos: [{ url: "https://cdn/v.mp4", duration: "5.1" }] }
    }))).toEqual({
      tag: "Succeeded",
      billed: true,
      usage: { unit: "second", quantity: 5.1, fields: { final_unit_deduction: "5" } }
    })
    expect(charge(legacyStateOf({ task_status: "failed", final_unit_deduction: "0", task_status_msg: "x" })).billed)
      .toBe(false)
    expect(charge(currentStateOf({ status: "failed", message: "x", billing: [{ type: "unit", amount: 2 }] })).billed)
      .toBe(true)
    expect(charge(currentStateOf({ status: "failed", message: "x", billing: [] })).billed).toBe(false)
  })

  it("veo: a video made is billed; a failed, filtered or empty operation is not", () => {
    const name = "models/veo/operations/1"
    const samples = [{ video: { uri: "https://generativelanguage.googleapis.com/v1beta/files/a:download" } }]
    const done = (response: unknown) => ({ name, done: true, response })
    expect(charge(veoState(name, done({ generateVideoResponse: { generatedSamples: samples } }))).billed).toBe(true)
    expect(charge(veoState(name, { name, done: true, error: { code: 13, message: "internal" } })).billed).toBe(false)
    expect(charge(veoState(name, done({ generateVideoResponse: { raiMediaFilteredCount: 1 } })))).toMatchObject({
      tag: "Failed",
      billed: false
    })
    expect(charge(veoState(name, done({ generateVideoResponse: { generatedSamples: [] } })))).toMatchObject({
      tag: "Succeeded",
      billed: false
    })
  })

  it("openai-videos: the video's seconds; a failed one is not billed", () => {
    expect(charge(videosState({ status: "completed", seconds: "8", size: "1280x720" }, "u"))).toEqual({
      tag: "Succeeded",
      billed: true,
      usage: { unit: "second", quantity: 8, fields: { seconds: "8", size: "1280x720" } }
    })
    expect(charge(videosState({ status: "failed", seconds: "8", error: { code: "x" } }, "u")).billed).toBe(false)
  })

  it("a chained gateway: the seconds or images delivered; a failure is refunded there, not billed", () => {
    const video = { status: "succeeded", result: { videos: [{ url: "https://up/v.mp4", duration_ms: 8000 }] } }
    expect(charge(gatewayState(video, "video", "https://up", "video_task_failed")).usage).toEqual({
      unit: "second",
      quantity: 8,
      fields: { duration_ms: 8000 }
    })
    const images = {
      status: "succeeded",
      result: { images: [{ url: "https://up/1.png" }, { url: "https://up/2.png" }] }
    }
    expect(charge(gatewayState(images, "image", "https://up", "image_task_failed")).usage).toEqual({
      unit: "image",
      quantity: 2
    })
    const failed = { status: "failed", error: { code: "video_task_failed", message: "m", retryable: true } }
    expect(charge(gatewayState(failed, "video", "https://up", "video_task_failed")).billed).toBe(false)
  })

  it("openai-images: the tokens its answer counts", () => {
    const usage = { input_tokens: 50, output_tokens: 1056, total_tokens: 1106 }
    const read = readImages(JSON.stringify({ data: [{ b64_json: "iVBORw0KGgo=" }], usage }))
    expect(read._tag === "Right" && read.right.usage).toEqual({ unit: "token", quantity: 1106, fields: usage })
    const none = readImages(JSON.stringify({ data: [{ b64_json: "iVBORw0KGgo=" }] }))
    expect(none._tag === "Right" && none.right.usage).toBeUndefined()
  })
})
