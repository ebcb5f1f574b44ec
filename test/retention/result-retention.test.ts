import { Effect } from "effect"
import { existsSync, rmSync } from "node:fs"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ResultSweep } from "../../src/retention/ResultSweep.ts"
import type { VideoTask } from "../../src/tasks/Task.ts"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { localObjectFile, runTask, storageKeyOf } from "../support/assets.ts"
import { alsoWith, configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { errorOf, raw } from "../support/http.ts"
import { METRICS_TOKEN, samplesOf, valueOf } from "../support/metrics.ts"
import { metricsText } from "../support/opsApi.ts"
import { startS3rver } from "../support/s3rver.ts"
import { query, videoRequest } from "../support/tasks.ts"

/**
 * Result retention (docs/operating.md, Retention): the `brief` group keeps
 * results one day, the default group for ever. A result made "two days ago"
 * (its asset's time moved back in the database) is removed from the store,
 * local and S3 alike, by the worker's sweeper; the asset content answers 410
 * `asset_expired`, the task stays readable with its item marked expired. A
 * sweep that died after removing an object but before marking it leaves the
 * row to the next one, which marks it once; two sweepers at once count each
 * result once.
 */

const BUCKET = "retention"
const DAY_S = 86_400

const retentionConfig = () => {
  const dir = configWith("groups.json", (groups) => {
    groups.groups.brief = { multiplier: 1, description: "Results kept a day", result_retention_days: 1 }
  })
  return alsoWith(dir, "limits.json", (limits) => {
    limits.retention = { sweep_interval_s: 1 }
  })
}

/** Until the asset says it expired: the sweep removes the object first, then marks the row. */
const swept = (gw: TestGateway, key: string, assetId: string) =>
  eventually(async () => {
    const asset = await raw(gw, "GET", `/v1/assets/${assetId}`, { key })
    return (asset.body as { expired?: boolean }).expired === true
  }, "the asset marked expired")

const older = (gw: TestGateway, assetId: string, days: number) =>
  query(gw, (sql) => sql`UPDATE assets SET created_at = created_at - ${days * DAY_S} WHERE id = ${assetId}`)

const made = async (gw: TestGateway, acct: Awaited<ReturnType<typeof createAccount>>) => {
  const task = await runTask(
    gw,
    { model: acct.model.key, resource: acct.resource.key },
    "video",
    videoRequest({ output: { duration: 4, generate_audio: false } })
  )
  const item = task.result!.videos[0]!
  const [{ size }] = await query<{ size: string }>(
    gw,
    (sql) => sql`SELECT size_bytes::text AS size FROM assets WHERE id = ${item.asset_id}`
  ) as [{ size: string }]
  return { task, item, key: await storageKeyOf(gw, item.asset_id), sizeBytes: Number(size) }
}

/** What every store shows for an expired result: 410 on content, the asset and the task marked, still readable. */
const expectExpired = async (gw: TestGateway, key: string, task: VideoTask, assetId: string) => {
  const content = await raw(gw, "GET", `/v1/assets/${assetId}/content`, { key })
  expect(content.status).toBe(410)
  expect(errorOf(content.body)).toMatchObject({ code: "asset_expired" })
  const asset = await raw(gw, "GET", `/v1/assets/${assetId}`, { key })
  expect(asset.status).toBe(200)
  const assetBody = asset.body as { expired?: boolean; expires_at: number }
  expect(assetBody.expired).toBe(true)
  expect(assetBody.expires_at).toBeLessThanOrEqual(Math.floor(Date.now() / 1000))
  const read = await raw(gw, "GET", `/v1/video/tasks/${task.id}`, { key })
  expect(read.status).toBe(200)
  const after = read.body as VideoTask & { result: { videos: Array<Record<string, unknown>> } }
  expect(after.status).toBe("succeeded")
  const item = after.result.videos[0]!
  expect(item).toMatchObject({ asset_id: assetId, expired: true })
  expect(item.expires_at as number).toBeLessThanOrEqual(Math.floor(Date.now() / 1000))
  // Everything else the task said is as it was.
  const { expired: _e, expires_at: _x, ...rest } = item
  expect(rest).toEqual(task.result!.videos[0])
}

describe(`result retention on the local store (${backend})`, () => {
  let gw: TestGateway
  let config: string
  beforeAll(async () => {
    config = retentionConfig()
    gw = await startGateway({ ROLE: "all", CONFIG_DIR: config, METRICS_TOKEN })
  })
  afterAll(async () => {
    await gw?.close()
    rmSync(config, { recursive: true, force: true })
  })

  it("removes a result past its group's retention; the task stays readable, the content answers 410", async () => {
    const brief = await createAccount(gw, { name: "brief", wallet_credits: 100, group: "brief" })
    const kept = await createAccount(gw, { name: "kept", wallet_credits: 100 })
    const old = await made(gw, brief)
    const young = await made(gw, brief)
    const forever = await made(gw, kept)
    await older(gw, old.item.asset_id, 2)
    // The default group keeps results for ever, however old.
    await older(gw, forever.item.asset_id, 400)

    await swept(gw, brief.resource.key, old.item.asset_id)
    expect(existsSync(localObjectFile(gw, old.key))).toBe(false)
    await expectExpired(gw, brief.resource.key, old.task, old.item.asset_id)

    // Within its retention, and in a group without one: kept and served.
    expect(existsSync(localObjectFile(gw, young.key))).toBe(true)
    expect(existsSync(localObjectFile(gw, forever.key))).toBe(true)
    for (const [acct, { item }] of [[brief, young], [kept, forever]] as const) {
      expect((await raw(gw, "GET", `/v1/assets/${item.asset_id}/content`, { key: acct.resource.key })).status).toBe(
        200
      )
      expect((await api(gw, acct).getAsset(item.asset_id)).expired).toBeUndefined()
    }

    const samples = samplesOf((await metricsText(gw, METRICS_TOKEN)).body)
    expect(valueOf(samples, "mtg_results_swept_objects_total", { group: "brief" })).toBe(1)
    expect(valueOf(samples, "mtg_results_swept_bytes_total", { group: "brief" })).toBe(old.sizeBytes)
    expect(valueOf(samples, "mtg_results_swept_objects_total", { group: "default" })).toBe(0)
    // Kept: the two results still there.
    expect(valueOf(samples, "mtg_results_kept_objects")).toBe(2)
  })

  it("a sweep that died after removing the file is finished by the next, once; two sweepers count each once", async () => {
    const brief = await createAccount(gw, { name: "brief-crash", wallet_credits: 100, group: "brief" })
    const results = await Promise.all([made(gw, brief), made(gw, brief), made(gw, brief)])
    const [crashed, ...rest] = results
    // What a sweeper that died between removing the object and marking the row leaves: a claim whose lease ran
    // out, the file gone, the row not marked. The worker's own sweeper is kept off it until then (the lease).
    await query(
      gw,
      (sql) =>
        sql`UPDATE assets SET created_at = created_at - ${2 * DAY_S}, sweep_lease_until = ${
          Math.floor(Date.now() / 1000) + 3
        } WHERE id = ${crashed!.item.asset_id}`
    )
    rmSync(localObjectFile(gw, crashed!.key))
    const before = samplesOf((await metricsText(gw, METRICS_TOKEN)).body)
    const sweptBefore = valueOf(before, "mtg_results_swept_objects_total", { group: "brief" }) ?? 0
    for (const r of rest) await older(gw, r.item.asset_id, 2)

    // Two sweeps at once beside the worker's own, as replicas would run them.
    const sweeps = await gw.runtime.runPromise(
      Effect.flatMap(ResultSweep, (s) => Effect.all([s.sweep, s.sweep], { concurrency: 2 }))
    )
    await eventually(async () => {
      const rows = await query<{ n: string }>(
        gw,
        (sql) =>
          sql`SELECT count(*)::text AS n FROM assets WHERE ${sql.in("id", results.map((r) => r.item.asset_id))}
          AND expired_at IS NOT NULL`
      )
      return rows[0]!.n === "3"
    }, "all three marked expired")
    for (const r of results) await expectExpired(gw, brief.resource.key, r.task, r.item.asset_id)
    const after = samplesOf((await metricsText(gw, METRICS_TOKEN)).body)
    // Each counted once, whoever swept it.
    expect((valueOf(after, "mtg_results_swept_objects_total", { group: "brief" }) ?? 0) - sweptBefore).toBe(3)
    expect(sweeps.reduce((n, s) => n + s.objects, 0)).toBeLessThanOrEqual(3)
  })
})

describe(`result retention on S3 (${backend})`, () => {
  let gw: TestGateway
  let config: string
  let s3: Awaited<ReturnType<typeof startS3rver>>
  beforeAll(async () => {
    s3 = await startS3rver(BUCKET)
    config = retentionConfig()
    gw = await startGateway({ ...s3.env, ROLE: "all", CONFIG_DIR: config })
  })
  afterAll(async () => {
    await gw?.close()
    await s3?.close()
    rmSync(config, { recursive: true, force: true })
  })

  const headStatus = (key: string) => s3.headStatus(key)

  it("removes the object from the bucket; the signed URL stops working, the task stays readable", async () => {
    const brief = await createAccount(gw, { name: "brief-s3", wallet_credits: 100, group: "brief" })
    const old = await made(gw, brief)
    const young = await made(gw, brief)
    expect(await headStatus(old.key)).toBe(200)
    await older(gw, old.item.asset_id, 2)
    await swept(gw, brief.resource.key, old.item.asset_id)
    expect(await headStatus(old.key)).toBe(404)
    await expectExpired(gw, brief.resource.key, old.task, old.item.asset_id)
    expect((await fetch(old.item.url)).status).toBe(404)
    expect(await headStatus(young.key)).toBe(200)
  })
})
