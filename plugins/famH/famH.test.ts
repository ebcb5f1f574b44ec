import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  api,
  backend,
  createAccount,
  createAndWait,
  download,
  operator,
  refused,
  startGateway,
  type TestGateway,
  type VideoBody
} from "../../test/support/kit.ts"

/**
 * famH's own test, in its folder: its table as callers meet it on the
 * sandbox. Silent videos only (`audio: "never"`), so `generate_audio`
 * defaults to false and true is refused before any charge; 10 s at 768p,
 * 6 s only at 1080p; landscape only.
 */

let gw: TestGateway
beforeAll(async () => {
  gw = await startGateway({ ROLE: "all" })
})
afterAll(() => gw?.close())

const task = (model: string, output: VideoBody["output"]): VideoBody => ({
  model,
  operation: "generation",
  input: { prompt: "a heron over the marsh" },
  output
})

describe(`famH on the sandbox (${backend})`, () => {
  it("makes a silent video by default, of the 768p tier's size", async () => {
    const { task: done } = await createAndWait(gw, task("provx-famH-02-768p", { duration: 6 }))
    expect(done.status).toBe("succeeded")
    const { probed } = await download(done.result!.videos[0]!.url)
    expect(probed.video).toMatchObject({ codec: "h264", width: 1280, height: 720 })
    expect(probed.audio).toBeUndefined()
    expect(Math.round(probed.durationS)).toBe(6)
  })

  it("refuses a soundtrack, 10 s at 1080p and a portrait ratio, charging nothing", async () => {
    const acct = await createAccount(gw, { name: "famH limits", wallet_credits: 10 })
    const caller = api(gw, acct)
    const sound = await refused(
      caller.createVideo(task("provx-famH-02-768p", { duration: 6, generate_audio: true })),
      400,
      "invalid_video_parameter"
    )
    expect(sound.message).toContain("output.generate_audio")
    await refused(caller.createVideo(task("provx-famH-02-1080p", { duration: 10 })), 400, "invalid_video_duration")
    await refused(
      caller.createVideo(task("provx-famH-02-768p", { duration: 10, aspect_ratio: "9:16" })),
      400,
      "invalid_video_aspect_ratio"
    )
    expect((await operator(gw).account(acct.id)).wallet_credits).toBe(10)
  })
})
