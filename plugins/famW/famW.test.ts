import { afterAll, beforeAll, describe, expect, it } from "vitest"
import {
  api,
  backend,
  createAccount,
  createAndWait,
  download,
  refused,
  startGateway,
  type TestGateway,
  type VideoBody
} from "../../test/support/kit.ts"
import { makeImage, startMediaServer } from "../../test/support/uploads.ts"

/**
 * famW's own test, in its folder: its table as callers meet it on the
 * sandbox. 5 or 10 s; 4:3 at 720p but not at 480p (Wan's 480p sizes are
 * 16:9, 9:16 and 1:1); a first frame but no last one; a soundtrack unless
 * asked not to.
 */

let gw: TestGateway
let media: Awaited<ReturnType<typeof startMediaServer>>
beforeAll(async () => {
  media = await startMediaServer({ "/first.png": { body: await makeImage("png", "160x120"), type: "image/png" } })
  gw = await startGateway({ ROLE: "all" })
})
afterAll(async () => {
  await gw?.close()
  await media?.close()
})

const task = (
  model: string,
  output: VideoBody["output"],
  input: Partial<VideoBody["input"]> = {}
): VideoBody => ({
  model,
  operation: "generation",
  input: { prompt: "lanterns over a river", ...input },
  output
})

describe(`famW on the sandbox (${backend})`, () => {
  it("a first-frame task at 4:3 makes a 720p video with a soundtrack", async () => {
    const { task: done } = await createAndWait(
      gw,
      task("provy-famW-2.5-720p", { duration: 5, aspect_ratio: "4:3" }, { image: { url: `${media.url}/first.png` } })
    )
    expect(done.status).toBe("succeeded")
    const { probed } = await download(done.result!.videos[0]!.url)
    expect(probed.video?.codec).toBe("h264")
    expect(probed.video!.height).toBe(720)
    expect(probed.audio).toBeDefined()
  })

  it("refuses 4:3 at 480p, 7 s, and a last frame", async () => {
    const caller = api(gw, await createAccount(gw, { name: "famW limits", wallet_credits: 10 }))
    await refused(
      caller.createVideo(task("provy-famW-2.5-480p", { duration: 5, aspect_ratio: "4:3" })),
      400,
      "invalid_video_aspect_ratio"
    )
    await refused(caller.createVideo(task("provy-famW-2.5-720p", { duration: 7 })), 400, "invalid_video_duration")
    const frames = { image: { url: `${media.url}/first.png` }, reference_images: [{ url: `${media.url}/first.png` }] }
    await refused(
      caller.createVideo(task("provy-famW-2.5-720p", { duration: 5 }, frames)),
      400,
      "invalid_request"
    )
  })
})
