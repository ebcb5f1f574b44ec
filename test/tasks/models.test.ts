import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { adminApi, createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { expectError, raw } from "../support/http.ts"
import { configuredModelIds } from "../support/plugins.ts"

let gw: TestGateway
/** Every model of the plugins `config/models.json` names. */
let allIds: Array<string>
beforeAll(async () => {
  gw = await startGateway()
  allIds = await configuredModelIds()
})
afterAll(() => gw?.close())

describe(`/v1/models (${backend})`, () => {
  it("lists every enabled model with its capabilities and pricing, for either key kind", async () => {
    const { model, resource } = await createAccount(gw)
    const byModelKey = await api(gw, { model: model.key }).models()
    const byResourceKey = await api(gw, { resource: resource.key }).models()
    expect(byResourceKey).toEqual(byModelKey)
    expect(byModelKey.object).toBe("list")
    expect(byModelKey.data.map((m) => m.id).sort()).toEqual(allIds)

    const v = byModelKey.data.find((m) => m.id === "provx-famV-3.1-standard-720p")
    expect(v).toMatchObject({
      object: "model",
      type: "video",
      family: "famV",
      owned_by: "famV",
      capabilities: {
        resolution: "720p",
        durations: { values: [4, 6, 8] },
        aspect_ratios: ["16:9", "9:16"],
        default_mode: "frame",
        modes: { images: { only_durations: [8], only_aspect_ratios: ["16:9"] } }
      },
      pricing: {
        unit: "second",
        currency: "credit",
        price: 0.2,
        effective_price: 0.2,
        group: "default",
        subscription_allowed: false
      }
    })
    const s25 = byModelKey.data.find((m) => m.id === "provy-famS-2.5-720p")
    expect(s25?.capabilities).toMatchObject({ durations: { min: 4, max: 30 } })
    expect(s25?.capabilities).toMatchObject({ media: { video: { max_total_duration_s: 30.2 } } })

    const img = byModelKey.data.find((m) => m.id === "provx-image-1")
    expect(img).toMatchObject({
      object: "model",
      type: "image",
      family: "image",
      capabilities: {
        operations: ["generation", "edit"],
        formats: ["png", "jpeg", "webp"],
        count: { min: 1, max: 4 },
        mask: true
      },
      pricing: { unit: "image", currency: "credit", price: 0.04, effective_price: 0.04 }
    })
  })

  it("prices with the caller's group: the key's own group first, then the account's", async () => {
    const { id, model } = await createAccount(gw, { name: "vip", group: "vip" })
    const vip = await api(gw, { model: model.key }).models()
    const famV = vip.data.find((m) => m.id === "provx-famV-3.1-standard-720p")
    expect(famV?.pricing).toMatchObject({ group: "vip", group_multiplier: 0.8, effective_price: 0.16 })

    const newKey = (group: string) =>
      adminApi(gw)((c) => c.admin.createKey({ path: { id }, payload: { kind: "resource", group } }))
    const asDefault = await api(gw, { resource: (await newKey("default")).key }).models()
    expect(asDefault.data[0]!.pricing.group).toBe("default")
    expect(asDefault.data[0]!.pricing.group_multiplier).toBe(1)

    // An aggregate group bills at its cheapest member.
    const asAuto = await api(gw, { resource: (await newKey("auto")).key }).models()
    expect(asAuto.data[0]!.pricing).toMatchObject({ group: "auto", group_multiplier: 0.8 })
  })

  it("needs an API key", async () => {
    expectError(await raw(gw, "GET", "/v1/models"), 401, "invalid_api_key")
  })
})
