import { afterAll, beforeAll, describe, expect, it } from "vitest"
import famK from "../../plugins/famK/index.ts"
import famS from "../../plugins/famS/index.ts"
import famV from "../../plugins/famV/index.ts"
import image from "../../plugins/image/index.ts"
import { createAccount } from "../support/adminApi.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { admin, call, expectError } from "../support/http.ts"

let gw: TestGateway
beforeAll(async () => {
  gw = await startGateway()
})
afterAll(() => gw?.close())

const allIds = [...famS.models, ...famV.models, ...famK.models, ...image.models].map((m) => m.id).sort()

describe(`/v1/models (${backend})`, () => {
  it("lists every enabled model with its capabilities and pricing, for either key kind", async () => {
    const { model, resource } = await createAccount(gw)
    const byModelKey = await call(gw, "GET", "/v1/models", { key: model.key })
    const byResourceKey = await call(gw, "GET", "/v1/models", { key: resource.key })
    expect(byModelKey.status).toBe(200)
    expect(byResourceKey.body).toEqual(byModelKey.body)
    expect(byModelKey.body.object).toBe("list")
    expect(byModelKey.body.data.map((m: any) => m.id).sort()).toEqual(allIds)

    const v = byModelKey.body.data.find((m: any) => m.id === "provx-famV-3.1-standard-720p")
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
    const s25 = byModelKey.body.data.find((m: any) => m.id === "provy-famS-2.5-720p")
    expect(s25.capabilities.durations).toEqual({ min: 4, max: 30 })
    expect(s25.capabilities.media.video.max_total_duration_s).toBe(30.2)

    const img = byModelKey.body.data.find((m: any) => m.id === "provx-image-1")
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
    const vip = await call(gw, "GET", "/v1/models", { key: model.key })
    const famV = vip.body.data.find((m: any) => m.id === "provx-famV-3.1-standard-720p")
    expect(famV.pricing).toMatchObject({ group: "vip", group_multiplier: 0.8, effective_price: 0.16 })

    const keyed = await admin(gw, "POST", `/admin/v1/accounts/${id}/keys`, { kind: "resource", group: "default" })
    const asDefault = await call(gw, "GET", "/v1/models", { key: keyed.body.key })
    expect(asDefault.body.data[0].pricing.group).toBe("default")
    expect(asDefault.body.data[0].pricing.group_multiplier).toBe(1)

    // An aggregate group bills at its cheapest member.
    const auto = await admin(gw, "POST", `/admin/v1/accounts/${id}/keys`, { kind: "resource", group: "auto" })
    const asAuto = await call(gw, "GET", "/v1/models", { key: auto.body.key })
    expect(asAuto.body.data[0].pricing).toMatchObject({ group: "auto", group_multiplier: 0.8 })
  })

  it("needs an API key", async () => {
    expectError(await call(gw, "GET", "/v1/models"), 401, "invalid_api_key")
  })
})
