import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { errorOf, expectError, raw } from "../support/http.ts"
import { startS3rver } from "../support/s3rver.ts"
import { randomBytes } from "../support/storage.ts"
import { lastSeen, pollTask, query } from "../support/tasks.ts"
import {
  audio,
  confirm,
  createSessions,
  image,
  makeAudio,
  makeImage,
  makeVideo,
  putBytes,
  rawComplete,
  type UploadFile,
  video
} from "../support/uploads.ts"

/**
 * The same three-step flow with objects in an S3-compatible bucket
 * (`@20minutes/s3rver`, which verifies SigV4): the upload URL points at the
 * bucket, the gateway reads the object back to confirm it, and the
 * confirmed URL is a pre-signed GET of the bucket that a task can use.
 */

const BUCKET = "gw-uploads-bucket"

let s3: Awaited<ReturnType<typeof startS3rver>>
let gw: TestGateway
const media: Record<string, Uint8Array> = {}

beforeAll(async () => {
  s3 = await startS3rver(BUCKET)
  const config = configWith("limits.json", (limits) => {
    limits.engine = { poll_interval_ms: 200, heartbeat_s: 1, lease_s: 10 }
  })
  const [started, mp4, wav, mp3, png, v11] = await Promise.all([
    startGateway({ ...s3.env, ROLE: "all", CONFIG_DIR: config }),
    makeVideo(4, { audio: true }),
    makeAudio("wav", 3),
    makeAudio("mp3", 3),
    makeImage("png"),
    makeVideo(11)
  ])
  gw = started
  Object.assign(media, { mp4, wav, mp3, png, v11 })
})
afterAll(async () => {
  await gw?.close()
  await s3?.close()
})

describe(`media uploads on S3 (${backend})`, () => {
  it("MP4, WAV, MP3 and PNG: PUT to the bucket, confirmed from the bucket, used in a famS task that succeeds", async () => {
    const acct = await createAccount(gw, { name: "s3", wallet_credits: 100 })
    const files: Array<UploadFile> = [
      video(media.mp4!),
      audio(media.wav!, "wav"),
      audio(media.mp3!, "mp3"),
      image(media.png!)
    ]
    const created = await createSessions(gw, acct.resource.key, files)
    for (const [i, session] of created.entries()) {
      const url = new URL(session.upload_url)
      expect(url.origin).toBe(s3.endpoint)
      expect(url.pathname).toBe(`/${BUCKET}/uploads/${acct.id}/${session.id}.${["mp4", "wav", "mp3", "png"][i]}`)
      expect(url.searchParams.get("X-Amz-SignedHeaders")).toBe("content-length;content-type;host")
      expect(session.headers).toEqual({ "Content-Type": files[i]!.mime_type })
      // The bucket holds the uploader to the signed type: the same bytes under another type are refused.
      if (i === 0) {
        const wrong = await fetch(session.upload_url, {
          method: "PUT",
          headers: { "Content-Type": "video/quicktime" },
          body: files[0]!.bytes as BodyInit
        })
        expect(wrong.status).toBe(403)
        await wrong.arrayBuffer()
      }
      expect(await putBytes(session, files[i]!.bytes)).toBe(200)
    }
    const ids = created.map((s) => s.id)
    const confirmed = await confirm(gw, acct.resource.key, ids)
    expect(confirmed.map((d) => [d.id, d.mime_type, d.size_bytes])).toEqual(
      files.map((f, i) => [ids[i], f.mime_type, f.bytes.length])
    )
    for (const [i, item] of confirmed.entries()) {
      expect(new URL(item.url).origin).toBe(s3.endpoint)
      const download = await fetch(item.url)
      expect(download.status).toBe(200)
      expect(Buffer.from(await download.arrayBuffer()).equals(Buffer.from(files[i]!.bytes))).toBe(true)
    }

    const [mp4, wav, mp3, png] = confirmed.map((d) => ({ url: d.url }))
    const task = await api(gw, acct).createVideo({
      model: "provy-famS-2.5-480p",
      operation: "generation",
      input: {
        prompt: "a kite over dunes",
        reference_mode: "media",
        reference_images: [png],
        reference_videos: [mp4],
        reference_audios: [wav, mp3]
      },
      output: { duration: 4 }
    })
    expect(lastSeen(await pollTask(gw, acct.resource.key, task.id))).toMatchObject({ status: "succeeded" })
  })

  it("refusals are the same as on the local store: all or nothing, wrong real type, never PUT, over the limits at creation", async () => {
    const acct = await createAccount(gw, { name: "s3-refusals", wallet_credits: 100 })
    const created = await createSessions(gw, acct.resource.key, [
      { kind: "video", filename: "still.mp4", mime_type: "video/mp4", bytes: media.png! },
      video(media.mp4!),
      video(media.v11!)
    ])
    const [pngAsMp4, neverPut, long] = [created[0]!, created[1]!, created[2]!]
    expect(await putBytes(pngAsMp4, media.png!)).toBe(200)
    expect(await putBytes(long, media.v11!)).toBe(200)
    const wrongType = await rawComplete(gw, acct.resource.key, [long.id, pngAsMp4.id, neverPut.id])
    expectError(wrongType, 400, "invalid_upload_content")
    expect(errorOf(wrongType.body)?.message).toContain(pngAsMp4.id)
    const notReceived = await rawComplete(gw, acct.resource.key, [long.id, neverPut.id])
    expectError(notReceived, 409, "upload_not_received")
    expect(errorOf(notReceived.body)?.message).toContain(neverPut.id)
    // Nothing was confirmed by the refused calls, and their copies are gone from the bucket.
    const rows = await query<{ status: string }>(
      gw,
      (sql) => sql`SELECT status FROM media_uploads WHERE ${sql.in("id", [long.id, pngAsMp4.id])}`
    )
    expect(rows.map((r) => r.status)).toEqual(["pending", "pending"])
    expect(
      await query(
        gw,
        (sql) => sql`SELECT storage_key FROM media_upload_pins WHERE ${sql.in("upload_id", [long.id, pngAsMp4.id])}`
      )
    ).toEqual([])

    const [confirmed] = await confirm(gw, acct.resource.key, [long.id])
    expect(confirmed.id).toBe(long.id)
    const task = await raw(gw, "POST", "/v1/video/tasks", {
      key: acct.model.key,
      json: {
        model: "provy-famS-2.0-480p",
        operation: "generation",
        input: { prompt: "a kite", reference_mode: "media", reference_videos: [{ url: confirmed.url }] },
        output: { duration: 4 }
      }
    })
    expectError(task, 400, "reference_media_duration_exceeded")
  })

  it("confirmation pins the bytes in the bucket: a second PUT through the upload_url never reaches the confirmed URL", async () => {
    const acct = await createAccount(gw, { name: "s3-pinning" })
    const [session] = await createSessions(gw, acct.resource.key, [image(media.png!)])
    expect(await putBytes(session, media.png!)).toBe(200)
    const [confirmed] = await confirm(gw, acct.resource.key, [session!.id])
    // The pinned copy sits under a key no upload URL names.
    expect(new URL(confirmed.url).pathname).toMatch(
      new RegExp(`^/${BUCKET}/confirmed/${acct.id}/${session.id}-[0-9A-Za-z]+\\.png$`)
    )
    const other = randomBytes(media.png!.length)
    expect(await putBytes(session, other)).toBe(200)
    // The bucket took the second PUT at the session's key...
    const atPutKey = await fetch(`${s3.endpoint}${new URL(session.upload_url).pathname}`)
    expect(Buffer.from(await atPutKey.arrayBuffer()).equals(Buffer.from(other))).toBe(true)
    // ...and the confirmed URL still serves the inspected bytes, also after confirming again.
    const [again] = await confirm(gw, acct.resource.key, [session!.id])
    for (const url of [confirmed.url, again.url]) {
      const download = await fetch(url)
      expect(download.status).toBe(200)
      expect(download.headers.get("content-type")).toBe("image/png")
      expect(Buffer.from(await download.arrayBuffer()).equals(Buffer.from(media.png!))).toBe(true)
    }
  })
})
