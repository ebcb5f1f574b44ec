import { mkdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type FakeFal, startFakeFal } from "../fakes/fal.ts"
import {
  api,
  backend,
  configWith,
  createAccount,
  download,
  expectChargedOnce,
  expectNoneOf,
  quickEngine,
  refused,
  runBesideFake,
  startGateway,
  type TestGateway
} from "../support/kit.ts"
import { makeImage, startMediaServer } from "../support/uploads.ts"

/**
 * The plugin guide's worked example (docs/plugins.md), taken from the page
 * itself: its plugin block is written to `extensions/famE/index.js` in a
 * copy of `config/`, its `models.json` block merged into the copy, and
 * nothing else changes. The family is then listed, validated by its own
 * table, served on the sandbox and, through the fake fal queue, by the
 * channel's `endpoints` data alone: the exact input fal's Wan 2.5 endpoints
 * take, one request per task, the video downloaded and probed.
 */

const FAL_KEY = "fal-key-id:fal-key-secret-0123456789"
const ON_FAL = "provz-famE-1-720p"
const ON_SANDBOX = "provz-famE-1-1080p"

/** The code block that follows `<!-- guide: name -->` in the page. */
const guideBlock = (page: string, name: string) => {
  const at = page.indexOf(`<!-- guide: ${name} -->`)
  const block = /```[a-z]*\n([\s\S]*?)```/.exec(page.slice(at))
  if (at < 0 || block === null) throw new Error(`docs/plugins.md has no "${name}" block`)
  return block[1]!
}

let fake: FakeFal
let gw: TestGateway
let media: Awaited<ReturnType<typeof startMediaServer>>

beforeAll(async () => {
  const page = readFileSync("docs/plugins.md", "utf8")
  const lines = JSON.parse(guideBlock(page, "models"))
  fake = await startFakeFal(FAL_KEY)
  media = await startMediaServer({ "/first.png": { body: await makeImage("png", "160x90"), type: "image/png" } })
  const config = configWith("models.json", (models) => {
    models.plugins.push(...lines.plugins)
    for (const [name, channel] of Object.entries(lines.channels)) {
      // The guide's channel as written, pointed at the fake instead of fal.
      models.channels[name] = {
        ...(channel as object),
        base_url: fake.url,
        webhook_jwks_url: `${fake.url}/.well-known/jwks.json`,
        concurrency: 10,
        timeouts: { submit_s: 5, poll_s: 5 }
      }
    }
    Object.assign(models.models, lines.models)
  })
  mkdirSync(join(config, "extensions", "famE"), { recursive: true })
  writeFileSync(join(config, "extensions", "famE", "index.js"), guideBlock(page, "plugin"))
  quickEngine(config)
  gw = await startGateway({ ROLE: "all", CONFIG_DIR: config, FAL_KEY })
}, 90_000)
afterAll(async () => {
  await gw?.close()
  await fake?.close()
  await media?.close()
})

const run = (body: Record<string, unknown>) =>
  runBesideFake({ fake, gw }, body, "famE caller", (r) => r.method === "POST")

describe(`the plugin guide's example family (${backend})`, () => {
  it("is listed with its table and prices, and refuses what its table does not allow", async () => {
    const caller = api(gw, await createAccount(gw, { name: "guide", wallet_credits: 100 }))
    const listed = (await caller.models()).data.filter((m) => m.family === "famE")
    expect(listed.map((m) => m.id).sort()).toEqual([ON_SANDBOX, ON_FAL])
    expect(listed.find((m) => m.id === ON_FAL)).toMatchObject({
      type: "video",
      owned_by: "famE",
      capabilities: { resolution: "720p", durations: { values: [5, 10] }, aspect_ratios: ["16:9", "9:16", "1:1"] },
      pricing: { unit: "second", price: 0.06 }
    })
    const base = { model: ON_FAL, operation: "generation", input: { prompt: "a kite" } } as const
    await refused(caller.createVideo({ ...base, output: { duration: 7 } }), 400, "invalid_video_duration")
    await refused(
      caller.createVideo({ ...base, output: { duration: 5 }, provider_options: { famE: { style: "x" } } }),
      400,
      "invalid_provider_options"
    )
    // The fal endpoint always makes sound: a silent video is refused at creation, nothing sent or charged.
    const before = fake.requests.length
    const silent = await refused(
      caller.createVideo({ ...base, output: { duration: 5, generate_audio: false } }),
      400,
      "invalid_video_parameter"
    )
    expect(JSON.stringify(silent)).toContain("output.generate_audio")
    expect(fake.requests.length).toBe(before)
  })

  it("a text-only task goes to fal's text-to-video endpoint with the input the data describes", async () => {
    const result = await run({
      model: ON_FAL,
      operation: "generation",
      input: { prompt: "a kite over the dunes" },
      output: { duration: 10, aspect_ratio: "9:16" },
      provider_options: { famE: { seed: 7, negative_prompt: "rain", prompt_extend: false } }
    })
    expect(result.task.status).toBe("succeeded")
    expect(result.creates.map((r) => r.path)).toEqual(["/fal-ai/wan-25-preview/text-to-video"])
    expect(result.creates[0]!.body).toEqual({
      prompt: "a kite over the dunes",
      duration: "10",
      aspect_ratio: "9:16",
      resolution: "720p",
      seed: 7,
      negative_prompt: "rain",
      enable_prompt_expansion: false
    })
    const { probed } = await download(result.task.result!.videos[0]!.url)
    expect(probed.video?.codec).toBe("h264")
    expect(probed.audio).toBeDefined()
    expectNoneOf(result.task, ["fal-ai", "wan-25", new URL(fake.url).host, ...fake.queued.keys()])
    await expectChargedOnce(gw, result.task.id)
  })

  it("a first-frame task goes to the image-to-video sibling with image_url and no ratio", async () => {
    const result = await run({
      model: ON_FAL,
      operation: "generation",
      input: { prompt: "the kite lands", image: { url: `${media.url}/first.png` } },
      output: { duration: 5 }
    })
    expect(result.task.status).toBe("succeeded")
    expect(result.creates.map((r) => r.path)).toEqual(["/fal-ai/wan-25-preview/image-to-video"])
    expect(result.creates[0]!.body).toEqual({
      prompt: "the kite lands",
      image_url: `${media.url}/first.png`,
      duration: "5",
      resolution: "720p"
    })
    expect((await download(result.task.result!.videos[0]!.url)).probed.video?.codec).toBe("h264")
  })

  it("the model without channels runs on the sandbox, silent when asked", async () => {
    const before = fake.requests.length
    const result = await run({
      model: ON_SANDBOX,
      operation: "generation",
      input: { prompt: "a kite at night" },
      output: { duration: 5, generate_audio: false, aspect_ratio: "1:1" }
    })
    expect(result.task.status).toBe("succeeded")
    expect(fake.requests.length).toBe(before)
    const { probed } = await download(result.task.result!.videos[0]!.url)
    expect(probed.video).toMatchObject({ codec: "h264", width: 1080, height: 1080 })
    expect(probed.audio).toBeUndefined()
  })
})
