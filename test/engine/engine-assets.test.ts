import { existsSync } from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { localObjectFile, storageKeyOf } from "../support/assets.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { expectError, raw } from "../support/http.ts"
import { probeBytes } from "../support/media.ts"
import { lastSeen, pollTask, resultOf, videoRequest } from "../support/tasks.ts"

/** Results of a channel configured with `url_auth: resource_api_key`: stable URLs behind the owner's `ak_` key. */

let gw: TestGateway
beforeAll(async () => {
  const config = configWith("models.json", (models) => {
    models.channels = { sandbox: { url_auth: "resource_api_key" } }
  })
  gw = await startGateway({ ROLE: "all", CONFIG_DIR: config })
})
afterAll(() => gw?.close())

describe(`result downloads with url_auth resource_api_key (${backend})`, () => {
  it("needs the owning account's resource key; another account's key gets 404; ranges work", async () => {
    const owner = await createAccount(gw, { name: "owner", wallet_credits: 100 })
    const stranger = await createAccount(gw, { name: "stranger", wallet_credits: 100 })
    const created = await api(gw, owner).createVideoReply(
      videoRequest({ output: { duration: 4, generate_audio: false } })
    )
    expect(created.status).toBe(202)
    const task = lastSeen(await pollTask(gw, owner.resource.key, created.task.id))
    expect(task.status).toBe("succeeded")
    const item = resultOf(task).videos[0]
    expect(item).toMatchObject({ url_auth: "resource_api_key", temporary: false, mime_type: "video/mp4" })
    expect(item.url).toBe(`${gw.url}/v1/assets/${item.asset_id}/content`)

    const anonymous = await fetch(item.url)
    expect(anonymous.status).toBe(401)
    const withModelKey = await raw(gw, "GET", new URL(item.url).pathname, { key: owner.model.key })
    expectError(withModelKey, 403, "permission_denied")
    const foreign = await raw(gw, "GET", new URL(item.url).pathname, { key: stranger.resource.key })
    expectError(foreign, 404, "asset_not_found", "not_found_error")

    const whole = await fetch(item.url, { headers: { authorization: `Bearer ${owner.resource.key}` } })
    expect(whole.status).toBe(200)
    expect(whole.headers.get("accept-ranges")).toBe("bytes")
    const bytes = new Uint8Array(await whole.arrayBuffer())
    expect(Number(whole.headers.get("content-length"))).toBe(bytes.byteLength)
    const media = await probeBytes(bytes)
    expect(media.video).toMatchObject({ codec: "h264", width: 854, height: 480 })
    expect(media.audio).toBeUndefined()

    const part = await fetch(item.url, {
      headers: { authorization: `Bearer ${owner.resource.key}`, range: "bytes=100-1099" }
    })
    expect(part.status).toBe(206)
    expect(part.headers.get("content-range")).toBe(`bytes 100-1099/${bytes.byteLength}`)
    expect(new Uint8Array(await part.arrayBuffer())).toEqual(bytes.subarray(100, 1100))

    const beyond = await fetch(item.url, {
      headers: { authorization: `Bearer ${owner.resource.key}`, range: `bytes=${bytes.byteLength + 10}-` }
    })
    expect(beyond.status).toBe(416)
    expect(beyond.headers.get("content-range")).toBe(`bytes */${bytes.byteLength}`)
  })

  it("the asset shows the stable content URL with no expiry; after DELETE that URL answers 404", async () => {
    const acct = await createAccount(gw, { name: "keeper", wallet_credits: 100 })
    const caller = api(gw, acct)
    const created = await caller.createVideo(videoRequest({ output: { duration: 4, generate_audio: false } }))
    const task = lastSeen(await pollTask(gw, acct.resource.key, created.id))
    expect(task.status).toBe("succeeded")
    const item = resultOf(task).videos[0]
    const asset = await caller.getAsset(item.asset_id)
    expect(asset).toMatchObject({
      id: item.asset_id,
      kind: "video",
      url: `${gw.url}/v1/assets/${item.asset_id}/content`,
      url_auth: "resource_api_key",
      temporary: false,
      expires_at: null
    })
    const file = localObjectFile(gw, await storageKeyOf(gw, item.asset_id))
    expect(existsSync(file)).toBe(true)
    const auth = { headers: { authorization: `Bearer ${acct.resource.key}` } }
    expect((await fetch(item.url, auth)).status).toBe(200)

    const deleted = await caller.deleteAsset(item.asset_id)
    expect(deleted).toEqual({ id: item.asset_id, object: "asset.deleted", deleted: true })
    expect(existsSync(file)).toBe(false)
    expectError(await raw(gw, "GET", new URL(item.url).pathname, { key: acct.resource.key }), 404, "asset_not_found")
  })
})
