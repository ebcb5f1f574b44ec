import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { api, rejection } from "../support/api.ts"
import { alsoWith, configWith } from "../support/config.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { query, videoRequest } from "../support/tasks.ts"

/**
 * A channel narrower than its family's table (catalog/Narrower.ts; the
 * spec's note on famS 2.5: the table's counts are ceilings, a narrower live
 * capability is refused with a specific validation error before generation
 * starts). A request only a narrower channel refuses is refused at creation
 * with the spec's code when every channel of the model refuses it, and goes
 * to the first channel that takes it otherwise.
 */

const ONLY_NARROW = "provy-famS-2.5-480p"
const THEN_FULL = "provy-famS-2.5-720p"
const narrower = {
  durations: { min: 4, max: 12 },
  aspect_ratios: ["16:9", "9:16"],
  modes: { media: { images: { min: 0, max: 2 } } }
}

let gw: TestGateway
let key: string
beforeAll(async () => {
  const config = configWith("models.json", (models) => {
    models.channels["sandbox-live"] = { ...models.channels.sandbox, adapter: "sandbox" }
    models.models[ONLY_NARROW].channels = [{ channel: "sandbox-live", narrower }]
    models.models[THEN_FULL].channels = [{ channel: "sandbox-live", narrower }, "sandbox"]
  })
  alsoWith(config, "limits.json", (limits) => {
    for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.burst = rate.per_second = 10_000
  })
  gw = await startGateway({ ROLE: "api", CONFIG_DIR: config })
  key = (await createAccount(gw, { name: "narrower", wallet_credits: 1000 })).model.key
}, 60_000)
afterAll(() => gw?.close())

const create = (model: string, over: { input?: object; output?: object } = {}) =>
  api(gw, { model: key }).createVideoReply(videoRequest({
    model,
    input: { prompt: "a harbour at dusk", ...over.input },
    output: { duration: 5, ...over.output }
  }))
/** A create the gateway refuses: its `GatewayError`. */
const refusal = (model: string, over: { input?: object; output?: object } = {}) => rejection(create(model, over))
const channelOf = async (id: string) =>
  (await query<{ channel: string }>(gw, (sql) => sql`SELECT channel FROM tasks WHERE id = ${id}`))[0]!.channel
const images = (n: number) =>
  Array.from({ length: n }, (_, i) => ({ url: `https://example.com/ref-${i}.png`, name: `ref${i}` }))

describe("a channel narrower than the family's table", () => {
  it("refuses at creation, with the spec's code, what the model's only channel cannot take", async () => {
    const long = await refusal(ONLY_NARROW, { output: { duration: 20 } })
    expect(long.status).toBe(400)
    expect(long).toMatchObject({ code: "invalid_video_duration" })
    expect(long.message).toContain("4 to 12")

    const square = await refusal(ONLY_NARROW, { output: { aspect_ratio: "1:1" } })
    expect(square.status).toBe(400)
    expect(square).toMatchObject({ code: "invalid_video_aspect_ratio" })

    const many = await refusal(ONLY_NARROW, { input: { reference_mode: "media", reference_images: images(3) } })
    expect(many.status).toBe(400)
    expect(many.message).toContain("at most 2")

    // The family's table takes all three: without the narrower channel they would be accepted.
    const fits = await create(ONLY_NARROW, { output: { duration: 12, aspect_ratio: "9:16" } })
    expect(fits.status, JSON.stringify(fits.task)).toBe(202)
    expect(await channelOf(fits.task.id)).toBe("sandbox-live")
  })

  it("sends what the narrower channel cannot take to the model's next channel, and the rest to the first", async () => {
    const long = await create(THEN_FULL, { output: { duration: 20 } })
    expect(long.status, JSON.stringify(long.task)).toBe(202)
    expect(await channelOf(long.task.id)).toBe("sandbox")
    const short = await create(THEN_FULL, { output: { duration: 8 } })
    expect(short.status).toBe(202)
    expect(await channelOf(short.task.id)).toBe("sandbox-live")
    // Nothing about channels reaches the caller.
    expect(JSON.stringify([long.task, short.task])).not.toContain("sandbox")
  })

  it("what the model's table refuses is refused as before, whatever the channels", async () => {
    const tooLong = await refusal(THEN_FULL, { output: { duration: 31 } })
    expect(tooLong.status).toBe(400)
    expect(tooLong).toMatchObject({ code: "invalid_video_duration" })
    expect(tooLong.message).toContain("4 to 30")
  })
})
