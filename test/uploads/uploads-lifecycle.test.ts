import { Effect, Option } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { VideoTaskRequest } from "../../src/client/Tasks.ts"
import { sha256Hex } from "../../src/platform/Digest.ts"
import { TaskOutcomes } from "../../src/tasks/engine/TaskOutcomes.ts"
import { TaskQueue } from "../../src/tasks/engine/TaskQueue.ts"
import { UploadSweep } from "../../src/uploads/UploadSweep.ts"
import { createAccount } from "../support/adminApi.ts"
import { api, rejection } from "../support/api.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { eventually } from "../support/eventually.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { errorOf, raw } from "../support/http.ts"

import { startS3rver } from "../support/s3rver.ts"
import { withStorage } from "../support/storage.ts"
import { query } from "../support/tasks.ts"
import { confirm, createSessions, image, makeImage, putBytes, uploadAll } from "../support/uploads.ts"

/**
 * The upload lifecycle on both object stores: sessions never confirmed,
 * confirmed uploads (the PUT key's object and the pinned copy) and image
 * pre-uploads are removed, rows and objects, once their URLs have expired,
 * except while a queued or running task still refers to them. Lifetimes are
 * seconds here. One gateway runs the engine (ROLE=all) with the sweeper
 * every second; another serves the API only, and its tests run sweeps
 * themselves, so what a sweep finds is decided by the test, not by timing.
 */

const lifetimes = (ttlS: number, sweepIntervalS: number) =>
  configWith("limits.json", (limits) => {
    limits.engine = { poll_interval_ms: 200, heartbeat_s: 1, lease_s: 10 }
    limits.uploads = {
      session_url_ttl_s: ttlS,
      confirmed_url_ttl_s: ttlS,
      image_url_ttl_s: ttlS,
      sweep_interval_s: sweepIntervalS,
      sweep_grace_s: 0
    }
  })

const b64 = (bytes: Uint8Array) => Buffer.from(bytes).toString("base64")

/** Waits until the clock is past `expiresAt` (Unix seconds); with no grace, a sweep may then take what expired there. */
const pastExpiry = (expiresAt: number) =>
  eventually(() => Math.floor(Date.now() / 1000) > expiresAt, `past ${expiresAt}`, {
    deadlineMs: 45_000,
    intervalMs: 200
  })

const stored = (gw: TestGateway, key: string) => withStorage(gw, (s) => Effect.map(s.head(key), Option.isSome))

const sweep = (gw: TestGateway) => gw.runtime.runPromise(Effect.flatMap(UploadSweep, (s) => s.sweep))

interface UploadKeys {
  readonly id: string
  readonly storage_key: string
  readonly pinned_key: string | null
}

const mediaRows = (gw: TestGateway, ids: ReadonlyArray<string>) =>
  query<UploadKeys & { status: string }>(
    gw,
    (sql) => sql`SELECT id, status, storage_key, pinned_key FROM media_uploads WHERE ${sql.in("id", ids)}`
  )

const imageRows = (gw: TestGateway, accountId: string) =>
  query<{ id: string; storage_key: string; expires_at: number }>(
    gw,
    (sql) =>
      sql`SELECT id, storage_key, expires_at FROM image_uploads WHERE account_id = ${accountId} ORDER BY created_at, id`
  )

/** Every key an upload has used: its session's and each copy confirmation made. */
const keysOf = async (gw: TestGateway, id: string) => {
  const [row] = await mediaRows(gw, [id])
  const pins = await query<{ storage_key: string }>(
    gw,
    (sql) => sql`SELECT storage_key FROM media_upload_pins WHERE upload_id = ${id}`
  )
  return [row!.storage_key, ...pins.map((p) => p.storage_key)]
}

const mediaTask = (url: string): VideoTaskRequest => ({
  model: "provy-famS-2.0-480p",
  operation: "generation",
  input: { prompt: "a lighthouse at dusk", reference_mode: "media", reference_images: [{ url }] },
  output: { duration: 4 }
})

let png: Uint8Array
let jpg: Uint8Array
beforeAll(async () => {
  ;[png, jpg] = await Promise.all([makeImage("png"), makeImage("jpg")])
})

for (const store of ["local", "s3"] as const) {
  describe(`upload lifecycle on the ${store} store (${backend})`, () => {
    let s3: Awaited<ReturnType<typeof startS3rver>> | undefined
    let auto: TestGateway
    let manual: TestGateway

    beforeAll(async () => {
      s3 = store === "s3" ? await startS3rver(`gw-lifecycle-${store}`) : undefined
      const env = s3?.env ?? {}
      ;[auto, manual] = await Promise.all([
        // Long enough for a test to look at everything before the sweeper, every second, takes it.
        startGateway({ ...env, ROLE: "all", CONFIG_DIR: lifetimes(8, 1) }),
        // The sweep interval is moot here: without ROLE worker or all, no sweeper runs.
        startGateway({ ...env, ROLE: "api", CONFIG_DIR: lifetimes(4, 300) })
      ])
    })
    afterAll(async () => {
      await Promise.all([auto?.close(), manual?.close()])
      await s3?.close()
    })

    it("the sweeper removes expired sessions, confirmed uploads (PUT key and pinned copy) and image pre-uploads: objects and rows", async () => {
      const acct = await createAccount(auto, { name: "expiry" })
      const key = acct.resource.key
      const [confirmed] = await uploadAll(auto, key, [image(png)])
      const [putOnly, neverPut] = await createSessions(auto, key, [image(png), image(png)])
      expect(await putBytes(putOnly!, png)).toBe(200)
      await api(auto, { resource: key }).client((c) =>
        c.resource.uploads.createImageUploadsBase64({
          payload: { images: [b64(png), { b64_json: b64(jpg), field: "mask" }] }
        })
      )

      const ids = [confirmed!.id, putOnly!.id, neverPut!.id]
      const confirmedKeys = await keysOf(auto, confirmed.id)
      const [row] = await mediaRows(auto, [confirmed.id])
      // The PUT key's object and the pinned copy the confirmed URL serves.
      expect(confirmedKeys).toHaveLength(2)
      expect(confirmedKeys).toContain(row!.pinned_key)
      const images = await imageRows(auto, acct.id)
      expect(images).toHaveLength(2)
      const objects = [
        ...confirmedKeys,
        (await mediaRows(auto, [putOnly.id]))[0]!.storage_key,
        ...images.map((i) => i.storage_key)
      ]
      for (const k of objects) expect(await stored(auto, k), k).toBe(true)

      await eventually(
        async () => (await mediaRows(auto, ids)).length === 0 && (await imageRows(auto, acct.id)).length === 0,
        "every expired upload swept",
        { deadlineMs: 45_000, intervalMs: 200 }
      )
      for (const k of objects) expect(await stored(auto, k), k).toBe(false)
      expect(
        await query(auto, (sql) => sql`SELECT storage_key FROM media_upload_pins WHERE ${sql.in("upload_id", ids)}`)
      ).toEqual([])
      expect(
        await query(auto, (sql) => sql`SELECT url_digest FROM media_upload_urls WHERE ${sql.in("upload_id", ids)}`)
      ).toEqual([])
      // Gone for the caller too.
      const again = await rejection(confirm(auto, key, [confirmed!.id]))
      expect(again.status).toBe(404)
    })

    it("an upload a queued task refers to is kept until the task ends, then swept; an unreferenced one of the same age is not kept", async () => {
      const gw = manual
      const acct = await createAccount(gw, { name: "referenced", wallet_credits: 100 })
      const [used, spare] = await uploadAll(gw, acct.resource.key, [image(png), image(png)])
      const tasks = api(gw, acct)
      const pre = await tasks.client((c) =>
        c.resource.uploads.createImageUploadsBase64({ payload: { images: [b64(png), b64(jpg)] } })
      )
      const [usedImage] = pre.images
      const video = await tasks.createVideo(mediaTask(used!.url))
      const edit = await tasks.createImage({
        model: "provx-image-1",
        operation: "edit",
        input: { prompt: "sepia", images: [{ url: usedImage! }] }
      })
      const taskIds = [video.id, edit.id]

      // Told apart by the digest of their URLs, as the sweeper does.
      const digestOf = new Map(
        (await query<{ id: string; url_digest: string }>(
          gw,
          (sql) => sql`SELECT id, url_digest FROM image_uploads WHERE account_id = ${acct.id}`
        )).map((r) => [r.url_digest, r.id])
      )
      const usedImageId = digestOf.get(await sha256Hex(usedImage!))
      const rows = await imageRows(gw, acct.id)
      const usedImageRow = rows.find((r) => r.id === usedImageId)
      const spareImageRow = rows.find((r) => r.id !== usedImageId)
      const usedKeys = [...await keysOf(gw, used.id), usedImageRow!.storage_key]
      const spareKeys = [...await keysOf(gw, spare.id), spareImageRow!.storage_key]
      await pastExpiry(Math.max(used.expires_at, spare.expires_at, usedImageRow!.expires_at, spareImageRow!.expires_at))

      const expectKept = async () => {
        expect((await mediaRows(gw, [used.id])).map((r) => r.status)).toEqual(["confirmed"])
        expect((await imageRows(gw, acct.id)).map((r) => r.id)).toEqual([usedImageRow!.id])
        for (const k of usedKeys) expect(await stored(gw, k), k).toBe(true)
      }

      // Queued: kept; the spare ones go.
      await sweep(gw)
      await expectKept()
      expect(await mediaRows(gw, [spare.id])).toEqual([])
      for (const k of spareKeys) expect(await stored(gw, k), k).toBe(false)
      // The confirmed URL still names its upload for the task's checks, expired as it is.
      const late = await raw(gw, "POST", "/v1/video/tasks", { key: acct.model.key, json: mediaTask(used!.url) })
      expect(late.status).toBe(400)
      expect(errorOf(late.body)?.message).toMatch(new RegExp(`upload ${used.id} has expired`))

      // Running: still kept.
      const channels = await query<{ channel: string }>(
        gw,
        (sql) => sql`SELECT DISTINCT channel FROM tasks WHERE ${sql.in("id", taskIds)}`
      )
      const claims = await gw.runtime.runPromise(
        Effect.flatMap(TaskQueue, (queue) =>
          Effect.map(
            Effect.forEach(channels, ({ channel }) => queue.claim(channel, "test-worker", 10, { concurrency: 10 })),
            (c) => c.flat()
          ))
      )
      expect(claims.map((c) => c.id).sort()).toEqual([...taskIds].sort())
      await sweep(gw)
      await expectKept()

      // Ended: swept at the next pass.
      await gw.runtime.runPromise(
        Effect.flatMap(
          TaskOutcomes,
          (outcomes) =>
            Effect.forEach(
              claims,
              (claim) =>
                outcomes.fail(claim, { code: "video_task_failed", message: "stopped by the test", retryable: false })
            )
        )
      )
      const removed = await sweep(gw)
      expect(removed).toMatchObject({ confirmed: 1, images: 1 })
      expect(await mediaRows(gw, [used.id])).toEqual([])
      expect(await imageRows(gw, acct.id)).toEqual([])
      for (const k of usedKeys) expect(await stored(gw, k), k).toBe(false)
    })

    it("concurrent sweeps remove each upload once; a sweep that died after removing the objects is finished by a later one", async () => {
      const gw = manual
      const acct = await createAccount(gw, { name: "replicas" })
      const created = await createSessions(gw, acct.resource.key, Array.from({ length: 6 }, () => image(png)))
      const ids = created.map((s) => s.id)
      for (const session of created.slice(0, 3)) expect(await putBytes(session, png)).toBe(200)
      const [dead] = await uploadAll(gw, acct.resource.key, [image(png)])
      const deadKeys = await keysOf(gw, dead.id)
      const [live] = await uploadAll(gw, acct.resource.key, [image(png)])
      await pastExpiry(Math.max(created[0]!.expires_at, dead!.expires_at, live!.expires_at))

      // A sweeper died holding `dead`: its objects are gone, its lease has run out. Another holds `live` right now.
      await withStorage(gw, (s) => Effect.forEach(deadKeys, (k) => s.remove(k)))
      const now = Math.floor(Date.now() / 1000)
      await query(
        gw,
        (sql) => sql`UPDATE media_uploads SET sweep_lease_until = ${now - 1} WHERE id = ${dead.id} RETURNING id`
      )
      await query(
        gw,
        (sql) => sql`UPDATE media_uploads SET sweep_lease_until = ${now + 600} WHERE id = ${live.id} RETURNING id`
      )
      // A row a sweeper holds is no longer the caller's.
      const held = await rejection(confirm(gw, acct.resource.key, [live!.id]))
      expect(held.status).toBe(404)

      const all = async () =>
        new Set((await query<{ id: string }>(gw, (sql) => sql`SELECT id FROM media_uploads`)).map((r) => r.id))
      const before = await all()
      const results = await gw.runtime.runPromise(
        Effect.flatMap(UploadSweep, (s) => Effect.all([s.sweep, s.sweep, s.sweep], { concurrency: "unbounded" }))
      )
      const after = await all()
      // Each removed row counted by exactly one sweep.
      const counted = results.reduce((n, r) => n + r.sessions + r.confirmed, 0)
      expect(counted).toBe(before.size - after.size)
      expect(await mediaRows(gw, [...ids, dead.id, live.id]).then((rows) => rows.map((r) => r.id))).toEqual([live.id])
      for (const k of await keysOf(gw, live.id)) expect(await stored(gw, k), k).toBe(true)
    })
  })
}
