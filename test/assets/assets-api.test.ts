import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { AssetListParams } from "../../src/client/Assets.ts"
import type { ImageTask, VideoTask } from "../../src/tasks/Task.ts"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { insertAsset, insertTask, localObjectFile, runTask, storageKeyOf, walkAssets } from "../support/assets.ts"
import { unthrottled } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { errorOf, expectError, raw } from "../support/http.ts"
import { videoRequest } from "../support/tasks.ts"

/**
 * The assets API on the local object store with the default channel
 * (`url_auth: none`, signed URLs valid 86400 s). One rendered video and one
 * rendered task of two images carry the core flows; paging over many assets
 * uses rows written straight to the database.
 */

let gw: TestGateway
let owner: Awaited<ReturnType<typeof createAccount>>
let stranger: Awaited<ReturnType<typeof createAccount>>
let video: VideoTask
let image: ImageTask

const keys = (acct: typeof owner) => ({ model: acct.model.key, resource: acct.resource.key })
// Raw: the refusals, and the answers whose exact fields are the point.
const get = (path: string, key = owner.resource.key) => raw(gw, "GET", path, { key })
const owned = () => api(gw, owner)

/** The parts of the OpenAPI document this test reads. */
interface OpenApiPaths {
  readonly paths: Record<
    string,
    Record<string, { parameters: Array<{ name: string }>; responses: Record<string, unknown> }>
  >
}

beforeAll(async () => {
  gw = await startGateway({ ROLE: "all", CONFIG_DIR: unthrottled() })
  owner = await createAccount(gw, { name: "owner", wallet_credits: 100 })
  stranger = await createAccount(gw, { name: "stranger", wallet_credits: 100 })
  // One after the other, so the video's asset is older than the images'.
  video = await runTask(gw, keys(owner), "video", videoRequest({ output: { duration: 4, generate_audio: false } }))
  image = await runTask(gw, keys(owner), "image", {
    model: "provx-image-1",
    operation: "generation",
    input: { prompt: "a paper boat on a pond" },
    output: { count: 2, size: "512x512", format: "png" }
  })
})
afterAll(() => gw?.close())

describe(`assets API (${backend})`, () => {
  it("an asset shows what its task's result item carries, with the signed URL's expiry", async () => {
    const item = video.result!.videos[0]!
    const signed = await fetch(item.url)
    expect(signed.status).toBe(200)
    const bytes = new Uint8Array(await signed.arrayBuffer())
    const expires = Number(new URL(item.url).searchParams.get("X-Expires"))

    const reply = await get(`/v1/assets/${item.asset_id}`)
    expect(reply.status).toBe(200)
    expect(reply.body).toEqual({
      id: item.asset_id,
      object: "asset",
      task_id: video.id,
      kind: "video",
      mime_type: "video/mp4",
      filename: item.filename,
      size_bytes: bytes.byteLength,
      width: item.width,
      height: item.height,
      duration_ms: 4000,
      url: item.url,
      url_auth: "none",
      temporary: true,
      expires_at: expires,
      created_at: video.completed_at
    })
    // Signed when stored, just before the task completed, for the channel's 86400 s.
    expect(expires - (video.completed_at ?? Infinity)).toBeGreaterThan(86400 - 10)
    expect(expires - (video.completed_at ?? -Infinity)).toBeLessThanOrEqual(86400)

    for (const img of image.result!.images) {
      const asset = await owned().getAsset(img.asset_id)
      expect(asset).toMatchObject({
        id: img.asset_id,
        task_id: image.id,
        kind: "image",
        mime_type: "image/png",
        filename: img.filename,
        size_bytes: img.size_bytes,
        width: 512,
        height: 512,
        url: img.url,
        url_auth: "none",
        temporary: true
      })
      expect(asset).not.toHaveProperty("duration_ms")
    }
  })

  it("content: the owner's resource key downloads the bytes; other keys do not", async () => {
    const item = image.result!.images[0]!
    const path = `/v1/assets/${item.asset_id}/content`
    const viaSigned = new Uint8Array(await (await fetch(item.url)).arrayBuffer())
    const res = await fetch(gw.url + path, { headers: { authorization: `Bearer ${owner.resource.key}` } })
    expect(res.status).toBe(200)
    expect(res.headers.get("content-type")).toBe("image/png")
    expect(res.headers.get("content-disposition")).toBe(`attachment; filename="${item.filename}"`)
    expect(new Uint8Array(await res.arrayBuffer())).toEqual(viaSigned)

    expectError(await get(path, stranger.resource.key), 404, "asset_not_found", "not_found_error")
    expectError(await get(path, owner.model.key), 403, "permission_denied", "permission_error")
    expectError(await raw(gw, "GET", path), 401, "invalid_api_key")
  })

  it("lists the account's assets newest first, in creation order, with every filter", async () => {
    const [v] = video.result!.videos.map((i) => i.asset_id)
    const [i0, i1] = image.result!.images.map((i) => i.asset_id)
    const all = await walkAssets(gw, owner.resource.key)
    // The images were written after the video, each task's items in order.
    expect(all.map((a) => a.id)).toEqual([i1, i0, v])
    expect(all[2]).toEqual(await owned().getAsset(v!))
    const ids = async (filters: AssetListParams, limit?: number) =>
      (await walkAssets(gw, owner.resource.key, filters, limit)).map((a) => a.id)

    expect(await ids({ kind: "video" })).toEqual([v])
    expect(await ids({ kind: "image" }, 1)).toEqual([i1, i0])
    expect(await ids({ task_id: image.id })).toEqual([i1, i0])
    expect(await ids({ task_id: video.id })).toEqual([v])
    expect(await ids({ task_id: video.id, kind: "image" })).toEqual([])
    expect(await ids({ task_id: "task_doesnotexist" })).toEqual([])

    const created = Object.fromEntries(all.map((a) => [a.id, a.created_at as number]))
    const lo = created[i0]!
    expect(await ids({ created_after: lo })).toEqual([i1, i0, v].filter((id) => created[id]! >= lo))
    expect(await ids({ created_before: created[v]! })).toEqual(
      [i1, i0, v].filter((id) => created[id]! <= created[v]!)
    )
    expect(await ids({ created_before: created[v]! - 1 })).toEqual([])
    expect(await ids({ created_after: lo + 1 })).toEqual([])

    const first = await owned().listAssets({ limit: 1 })
    expect(first).toMatchObject({ has_more: true, first_id: i1, last_id: i1 })
    const second = await owned().listAssets({ limit: 1, after: i1! })
    expect(second.data.map((a) => a.id)).toEqual([i0])

    // Another account sees none of them.
    expect(await walkAssets(gw, stranger.resource.key)).toEqual([])
  })

  it("pages through many assets made within the same seconds exactly once, newest first, also when one is deleted", async () => {
    const pager = await createAccount(gw, { name: "pager" })
    const T0 = 1_800_000_000
    const tasks = [
      { accountId: pager.id, kind: "video" as const, taskId: await insertTask(gw, pager.id, "video") },
      { accountId: pager.id, kind: "image" as const, taskId: await insertTask(gw, pager.id, "image") },
      { accountId: pager.id, kind: "video" as const, taskId: await insertTask(gw, pager.id, "video") }
    ]
    const made: Array<{ id: string; taskId: string; kind: string; createdAt: number }> = []
    for (let i = 0; i < 130; i++) {
      const task = tasks[i % 3]!
      // Twenty assets per second: their random ids say nothing of their order.
      const createdAt = T0 + Math.floor(i / 20)
      made.push({ id: await insertAsset(gw, task, createdAt), taskId: task.taskId, kind: task.kind, createdAt })
    }
    const newest = made.slice().reverse()
    const expected = (keep: (a: (typeof made)[number]) => boolean) => newest.filter(keep).map((a) => a.id)
    const ids = async (filters: AssetListParams, limit?: number) =>
      (await walkAssets(gw, pager.resource.key, filters, limit)).map((a) => a.id)

    expect(await ids({})).toEqual(expected(() => true))
    expect(await ids({}, 7)).toEqual(expected(() => true))
    expect(await ids({}, 100)).toEqual(expected(() => true))
    expect(await ids({ kind: "image" }, 9)).toEqual(expected((a) => a.kind === "image"))
    expect(await ids({ task_id: tasks[2]!.taskId }, 6)).toEqual(expected((a) => a.taskId === tasks[2]!.taskId))
    expect(await ids({ created_after: T0 + 2, created_before: T0 + 4 }, 11))
      .toEqual(expected((a) => a.createdAt >= T0 + 2 && a.createdAt <= T0 + 4))
    expect(await ids({ kind: "video", created_after: T0 + 3 }, 5))
      .toEqual(expected((a) => a.kind === "video" && a.createdAt >= T0 + 3))

    // A caller deleting what it has paged through keeps paging from the deleted asset.
    const page = await api(gw, pager).listAssets({ limit: 10 })
    expect(page.data.map((a) => a.id)).toEqual(expected(() => true).slice(0, 10))
    const lastId = page.last_id!
    expect(await api(gw, pager).deleteAsset(lastId)).toMatchObject({ deleted: true })
    // A 200: the typed client decodes the contract's answer or fails.
    const next = await api(gw, pager).listAssets({ limit: 10, after: lastId })
    expect(next.data.map((a) => a.id)).toEqual(expected(() => true).slice(10, 20))
    expect(await ids({}, 50)).toEqual(expected((a) => a.id !== lastId))
  })

  it("refuses bad query parameters with 400 invalid_request naming the parameter", async () => {
    const [othersAsset] = await walkAssets(gw, owner.resource.key)
    const foreign = await createAccount(gw, { name: "foreign" })
    const cases: Array<[string, string]> = [
      ["limit=0", "limit"],
      ["limit=101", "limit"],
      ["limit=abc", "limit"],
      ["limit=2.5", "limit"],
      ["kind=audio", "kind"],
      ["created_after=-1", "created_after"],
      ["created_before=soon", "created_before"],
      ["after=asset_0000000000000000000000", "after"],
      [`after=${othersAsset.id}`, "after"],
      ["after=%00", "after"],
      ["task_id=%00", "task_id"],
      [`task_id=${"t".repeat(201)}`, "task_id"],
      ["colour=red", "colour"],
      ["limit=5&limit=6", "limit"]
    ]
    for (const [q, param] of cases) {
      const reply = await get(`/v1/assets?${q}`, foreign.resource.key)
      expectError(reply, 400, "invalid_request", "invalid_request_error")
      expect(errorOf(reply.body)?.message, q).toContain(param)
    }
  })

  it("another account's, unknown and malformed ids are 404 asset_not_found; a model token is 403", async () => {
    const mine = video.result!.videos[0]!.asset_id
    const absent = [
      [mine, stranger.resource.key],
      ["asset_0000000000000000000000", owner.resource.key],
      [`asset_${"x".repeat(500)}`, owner.resource.key],
      ["%00", owner.resource.key],
      [video.id, owner.resource.key]
    ]
    for (const [id, key] of absent) {
      for (const [method, suffix] of [["GET", ""], ["DELETE", ""], ["GET", "/content"]]) {
        const reply = await raw(gw, method!, `/v1/assets/${id}${suffix}`, { key })
        expectError(reply, 404, "asset_not_found", "not_found_error")
      }
    }
    // The stranger's DELETE changed nothing: a 200 (the typed client decodes the contract's answer or fails).
    await owned().getAsset(mine)

    for (
      const [method, path] of [["GET", "/v1/assets"], ["GET", `/v1/assets/${mine}`], ["DELETE", `/v1/assets/${mine}`]]
    ) {
      expectError(
        await raw(gw, method!, path!, { key: owner.model.key }),
        403,
        "permission_denied",
        "permission_error"
      )
      expectError(await raw(gw, method!, path!), 401, "invalid_api_key", "authentication_error")
    }
    await owned().getAsset(mine)
  })

  it("DELETE removes the bytes: the result URL, the asset and its content are gone; the task is unchanged", async () => {
    const item = image.result!.images[0]!
    const file = localObjectFile(gw, await storageKeyOf(gw, item.asset_id))
    expect(existsSync(file)).toBe(true)
    expect((await fetch(item.url)).status).toBe(200)
    const taskBefore = await owned().getImage(image.id)

    const deleted = await api(gw, owner).deleteAsset(item.asset_id)
    expect(deleted).toEqual({ id: item.asset_id, object: "asset.deleted", deleted: true })

    expect(existsSync(file)).toBe(false)
    expect(existsSync(`${file}~meta.json`)).toBe(false)
    const signed = await raw(gw, "GET", new URL(item.url).pathname + new URL(item.url).search)
    expectError(signed, 404, "object_not_found")
    expectError(await get(`/v1/assets/${item.asset_id}`), 404, "asset_not_found")
    expectError(await get(`/v1/assets/${item.asset_id}/content`), 404, "asset_not_found")
    expectError(
      await raw(gw, "DELETE", `/v1/assets/${item.asset_id}`, { key: owner.resource.key }),
      404,
      "asset_not_found"
    )
    expect((await walkAssets(gw, owner.resource.key, { task_id: image.id })).map((a) => a.id))
      .toEqual([image.result!.images[1]!.asset_id])
    // The other image of the task is untouched.
    expect((await fetch(image.result!.images[1]!.url)).status).toBe(200)
    // The task object keeps its result as it was; only the URL there no longer works.
    expect(await owned().getImage(image.id)).toEqual(taskBefore)
  })

  it("a DELETE whose storage removal fails answers 503 with Retry-After and changes nothing; repeated, it succeeds", async () => {
    const item = image.result!.images[1]!
    const file = localObjectFile(gw, await storageKeyOf(gw, item.asset_id))
    const bytes = readFileSync(file)
    // A non-empty directory where the file was: the store cannot remove it.
    rmSync(file)
    mkdirSync(file)
    writeFileSync(`${file}/blocker`, "x")
    // Raw: the 503's Retry-After header is checked.
    const failed = await raw(gw, "DELETE", `/v1/assets/${item.asset_id}`, { key: owner.resource.key })
    expectError(failed, 503, "storage_unavailable", "api_error")
    expect(failed.headers.get("retry-after")).toBe("10")
    await owned().getAsset(item.asset_id)
    expect((await walkAssets(gw, owner.resource.key, { task_id: image.id })).map((a) => a.id)).toEqual([item.asset_id])

    rmSync(file, { recursive: true })
    writeFileSync(file, bytes)
    expect(await api(gw, owner).deleteAsset(item.asset_id)).toMatchObject({ deleted: true })
    expect(existsSync(file)).toBe(false)
    expectError(await get(`/v1/assets/${item.asset_id}`), 404, "asset_not_found")
  })

  it("the OpenAPI document describes the assets endpoints", async () => {
    const doc = await raw(gw, "GET", "/openapi.json")
    expect(doc.status).toBe(200)
    expect(typeof doc.body).toBe("object")
    const paths = (doc.body as OpenApiPaths).paths
    expect(Object.keys(paths["/v1/assets"] ?? {})).toContain("get")
    expect(Object.keys(paths["/v1/assets/{asset_id}"] ?? {}).sort()).toEqual(["delete", "get"])
    expect(Object.keys(paths["/v1/assets/{asset_id}/content"] ?? {})).toContain("get")
    expect(paths["/v1/assets"]?.get?.parameters.map((p) => p.name).sort())
      .toEqual(["after", "created_after", "created_before", "kind", "limit", "task_id"])
    expect(JSON.stringify(paths["/v1/assets/{asset_id}"]?.get?.responses["200"])).toContain("expires_at")
  })
})
