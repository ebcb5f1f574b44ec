import { Effect } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { ObjectStorage } from "../src/services/ObjectStorage.ts"
import { configWith } from "./support/config.ts"
import { backend } from "./support/database.ts"
import { startGateway, type TestGateway } from "./support/gateway.ts"
import { admin, call, createAccount, expectError } from "./support/http.ts"
import { probeBytes } from "./support/media.ts"
import { randomBytes } from "./support/storage.ts"
import { ledgerOf, pollTask, query } from "./support/tasks.ts"
import {
  audio,
  complete,
  image,
  makeAudio,
  makeImage,
  makeVideo,
  putBytes,
  sessions,
  type UploadFile,
  uploadAll,
  video
} from "./support/uploads.ts"

/**
 * The three-step direct upload on the local object store, with the engine
 * running (ROLE=all): sessions, bytes PUT by plain fetch, confirmation by
 * inspection, and the confirmed URLs used in famS media-mode tasks. Every
 * refusal is checked where it happens: at session creation, per item at
 * confirmation, and at task creation (400 before idempotency and charge).
 */

let gw: TestGateway
const media: Record<string, Uint8Array> = {}

beforeAll(async () => {
  const config = configWith("limits.json", (limits) => {
    limits.engine = { poll_interval_ms: 200, heartbeat_s: 1, lease_s: 10 }
  })
  const [started, mp4, v2, v3, v8, v10, v11, wav, mp3, png, jpg] = await Promise.all([
    startGateway({ ROLE: "all", CONFIG_DIR: config }),
    makeVideo(4, { audio: true }),
    makeVideo(2),
    makeVideo(3),
    makeVideo(8),
    makeVideo(10),
    makeVideo(11),
    makeAudio("wav", 3),
    makeAudio("mp3", 3),
    makeImage("png"),
    makeImage("jpg")
  ])
  gw = started
  Object.assign(media, { mp4, v2, v3, v8, v10, v11, wav, mp3, png, jpg })
})
afterAll(() => gw?.close())

const nowS = () => Math.floor(Date.now() / 1000)

const balance = async (accountId: string) => (await admin(gw, "GET", `/admin/v1/accounts/${accountId}`)).body.wallet_credits

const mediaTask = (model: string, refs: { images?: Array<string>; videos?: Array<string>; audios?: Array<string> }, duration = 4) => ({
  model,
  operation: "generation",
  input: {
    prompt: "a paper boat on a pond",
    reference_mode: "media",
    ...(refs.images ? { reference_images: refs.images.map((url) => ({ url })) } : {}),
    ...(refs.videos ? { reference_videos: refs.videos.map((url) => ({ url })) } : {}),
    ...(refs.audios ? { reference_audios: refs.audios.map((url) => ({ url })) } : {})
  },
  output: { duration }
})

describe(`media uploads on the local store (${backend})`, () => {
  it("MP4, WAV, MP3 and PNG go through the three steps and a famS media-mode task using them succeeds", async () => {
    const acct = await createAccount(gw, { name: "e2e", wallet_credits: 100 })
    const files: Array<UploadFile> = [
      video(media.mp4!),
      audio(media.wav!, "wav"),
      audio(media.mp3!, "mp3"),
      image(media.png!)
    ]

    // Step 1: sessions in request order, each with a PUT URL, the headers to send and an expiry.
    const created = await sessions(gw, acct.resource.key, files)
    expect(created.status).toBe(200)
    expect(created.body.object).toBe("media.upload.session.list")
    expect(created.body.data).toHaveLength(4)
    for (const [i, session] of created.body.data.entries()) {
      expect(Object.keys(session).sort()).toEqual(["client_id", "expires_at", "headers", "id", "kind", "method", "upload_url"])
      expect(session).toMatchObject({ client_id: `c${i}`, kind: files[i]!.kind, method: "PUT" })
      expect(session.id).toMatch(/^upl_[0-9A-Za-z]{22}$/)
      expect(session.headers).toEqual({ "Content-Type": files[i]!.mime_type })
      expect(Math.abs(session.expires_at - (nowS() + 900))).toBeLessThanOrEqual(5)
    }
    const ids = created.body.data.map((s: any) => s.id)

    // Step 2: the bytes, by plain HTTP, straight to storage.
    for (const [i, session] of created.body.data.entries()) {
      expect(await putBytes(session, files[i]!.bytes)).toBe(200)
    }

    // Step 3: confirmed from the stored bytes.
    const confirmed = await complete(gw, acct.resource.key, ids)
    expect(confirmed.status).toBe(200)
    expect(confirmed.body.object).toBe("media.upload.list")
    expect(confirmed.body.errors).toEqual([])
    expect(confirmed.body.data.map((d: any) => d.id)).toEqual(ids)
    const types = ["video/mp4", "audio/wav", "audio/mpeg", "image/png"]
    for (const [i, item] of confirmed.body.data.entries()) {
      expect(Object.keys(item).sort()).toEqual(["client_id", "expires_at", "id", "kind", "mime_type", "size_bytes", "temporary", "url"])
      expect(item).toMatchObject({ client_id: `c${i}`, kind: files[i]!.kind, mime_type: types[i], size_bytes: files[i]!.bytes.length, temporary: true })
      expect(Math.abs(item.expires_at - (nowS() + 86_400))).toBeLessThanOrEqual(5)
      // The confirmed URL serves exactly the uploaded bytes, with the verified type, and needs no key.
      const download = await fetch(item.url)
      expect(download.status).toBe(200)
      expect(download.headers.get("content-type")).toBe(types[i])
      expect(Buffer.from(await download.arrayBuffer()).equals(Buffer.from(files[i]!.bytes))).toBe(true)
    }
    // Confirming again answers the same confirmed items.
    const again = await complete(gw, acct.resource.key, ids)
    expect(again.body).toEqual(confirmed.body)

    const [mp4, wav, mp3, png] = confirmed.body.data.map((d: any) => d.url)
    const task = await call(gw, "POST", "/v1/video/tasks", {
      key: acct.model.key,
      json: mediaTask("provy-famS-2.5-480p", { images: [png], videos: [mp4], audios: [wav, mp3] })
    })
    expect(task.status).toBe(202)
    const done = (await pollTask(gw, acct.resource.key, task.body.id)).at(-1)
    expect(done).toMatchObject({ status: "succeeded", error: null })
    const result = await probeBytes(new Uint8Array(await (await fetch(done.result.videos[0].url)).arrayBuffer()))
    expect(result.video).toMatchObject({ codec: "h264", width: 854, height: 480 })
    expect(Math.abs(result.durationS - 4)).toBeLessThan(0.1)
  })

  it("session creation refuses what no model accepts, naming the file, and signs nothing", async () => {
    const acct = await createAccount(gw, { name: "sessions" })
    const key = acct.resource.key
    const file = (over: Record<string, unknown>) => ({ client_id: "a", kind: "video", filename: "a.mp4", mime_type: "video/mp4", size_bytes: 1000, ...over })
    const refused = async (files: Array<unknown>, needle: string | RegExp) => {
      const reply = await call(gw, "POST", "/v1/media/uploads", { key, json: { files } })
      expectError(reply, 400, "invalid_request", "invalid_request_error")
      expect(reply.body.error.message).toMatch(needle)
    }
    // Per-file caps of the famS table: 200 MB video, 15 MB audio, 20 MB image.
    await refused([file({}), file({ size_bytes: 200_000_001 })], /files\[1\]\.size_bytes.*200000000/)
    await refused([file({ kind: "audio", mime_type: "audio/mpeg", filename: "a.mp3", size_bytes: 15_000_001 })], /15000000/)
    await refused([file({ kind: "image", mime_type: "image/png", filename: "a.png", size_bytes: 20_000_001 })], /20000000/)
    // Types outside the table, or of another kind than the one declared.
    await refused([file({ mime_type: "video/webm" })], /files\[0\]\.mime_type/)
    await refused([file({ kind: "image", mime_type: "image/gif" })], /image\/gif/)
    await refused([file({ kind: "video", mime_type: "audio/mpeg" })], /audio\/mpeg/)
    // Shape: kinds, counts, fields.
    await refused([file({ kind: "document" })], /kind/)
    await refused([], /files/)
    await refused(Array.from({ length: 13 }, (_, i) => file({ client_id: `c${i}` })), /files/)
    await refused([file({ size_bytes: 0 })], /size_bytes/)
    await refused([file({ size_bytes: 1.5 })], /size_bytes/)
    const { filename: _, ...noName } = file({})
    await refused([noName], /filename/)
    await refused([file({ extra: 1 })], /extra/)
    expect((await query(gw, (sql) => sql`SELECT m.id FROM media_uploads m JOIN accounts a ON a.id = m.account_id WHERE a.name = 'sessions'`)).length).toBe(0)

    // Twelve at the limits are fine; spellings of the same type are normalised into the signed header.
    const ok = await call(gw, "POST", "/v1/media/uploads", {
      key,
      json: {
        files: [
          file({ size_bytes: 200_000_000 }),
          file({ kind: "audio", mime_type: "audio/x-wav", filename: "a.wav", size_bytes: 15_000_000 }),
          file({ kind: "image", mime_type: "image/jpg", filename: "a.jpg", size_bytes: 20_000_000 }),
          ...Array.from({ length: 9 }, () => file({ mime_type: "video/quicktime", filename: "b.mov" }))
        ]
      }
    })
    expect(ok.status).toBe(200)
    expect(ok.body.data).toHaveLength(12)
    expect(ok.body.data[1].headers).toEqual({ "Content-Type": "audio/wav" })
    expect(ok.body.data[2].headers).toEqual({ "Content-Type": "image/jpeg" })

    const doc = await call(gw, "GET", "/openapi.json")
    expect(Object.keys(doc.body.paths)).toEqual(expect.arrayContaining([
      "/v1/media/uploads", "/v1/media/uploads/complete", "/v1/image/uploads", "/v1/image/uploads/base64"
    ]))

    // Resource keys only.
    expectError(await call(gw, "POST", "/v1/media/uploads", { key: acct.model.key, json: { files: [file({})] } }), 403, "permission_denied")
    expectError(await call(gw, "POST", "/v1/media/uploads", { json: { files: [file({})] } }), 401, "invalid_api_key")
  })

  it("confirmation answers per item: unknown, another account's, never PUT, wrong real type, corrupt media", async () => {
    const acct = await createAccount(gw, { name: "confirm" })
    const other = await createAccount(gw, { name: "other" })
    const key = acct.resource.key
    const [othersUpload] = await uploadAll(gw, other.resource.key, [image(media.png!)])

    const truncated = media.mp4!.subarray(0, Math.floor(media.mp4!.length * 0.6))
    const files: Array<UploadFile> = [
      video(media.v3!),
      // A PNG named .mp4 and declared as an MP4 video.
      { kind: "video", filename: "holiday.mp4", mime_type: "video/mp4", bytes: media.png! },
      // A JPEG declared as a PNG: right kind, contradicting type.
      { kind: "image", filename: "photo.png", mime_type: "image/png", bytes: media.jpg! },
      // An MP3 declared as WAV.
      { kind: "audio", filename: "tone.wav", mime_type: "audio/wav", bytes: media.mp3! },
      // An MP4 cut after 60 %: the header is there, the samples are not.
      { kind: "video", filename: "cut.mp4", mime_type: "video/mp4", bytes: truncated },
      // MP4 signature, then noise.
      { kind: "video", filename: "noise.mp4", mime_type: "video/mp4", bytes: Buffer.concat([media.mp4!.subarray(0, 40), randomBytes(5000)]) },
      // Text.
      { kind: "audio", filename: "noise.mp3", mime_type: "audio/mpeg", bytes: new TextEncoder().encode("not media ".repeat(300)) },
      // Never PUT.
      video(media.v8!)
    ]
    const created = await sessions(gw, key, files)
    expect(created.status).toBe(200)
    const ids: Array<string> = created.body.data.map((s: any) => s.id)
    for (const [i, session] of created.body.data.entries()) {
      if (i < files.length - 1) expect(await putBytes(session, files[i]!.bytes)).toBe(200)
    }
    const unknown = "upl_000000000000000000000x"
    const reply = await complete(gw, key, [unknown, ...ids, othersUpload.id])
    expect(reply.status).toBe(200)
    expect(reply.body.data.map((d: any) => d.id)).toEqual([ids[0]])
    const codes = Object.fromEntries(reply.body.errors.map((e: any) => [e.id, e.code]))
    expect(reply.body.errors.map((e: any) => e.id)).toEqual([unknown, ...ids.slice(1), othersUpload.id])
    expect(codes).toEqual({
      [unknown]: "upload_not_found",
      [ids[1]!]: "upload_type_mismatch",
      [ids[2]!]: "upload_type_mismatch",
      [ids[3]!]: "upload_type_mismatch",
      [ids[4]!]: "invalid_reference_media_duration",
      [ids[5]!]: "invalid_reference_media_duration",
      [ids[6]!]: "upload_type_mismatch",
      [ids[7]!]: "upload_not_received",
      [othersUpload.id]: "upload_not_found"
    })
    for (const e of reply.body.errors) {
      expect(Object.keys(e).sort()).toEqual(["code", "id", "message"])
      expect(e.message).toContain(e.id)
      // Messages are for the caller: no temporary paths or tool names.
      expect(e.message).not.toMatch(/\/tmp|ffprobe|file:/)
    }
    expect(reply.body.errors.find((e: any) => e.id === ids[1]).message).toMatch(/PNG image \(image\/png\).*video/)

    // A refused upload stays unconfirmed and its URL is nobody's reference.
    const [row] = await query<{ status: string }>(gw, (sql) => sql`SELECT status FROM media_uploads WHERE id = ${ids[1]}`)
    expect(row!.status).toBe("pending")

    // The body itself: 1 to 12 ids, JSON only.
    expectError(await complete(gw, key, []), 400, "invalid_request")
    expectError(await complete(gw, key, Array.from({ length: 13 }, (_, i) => `upl_${i}`)), 400, "invalid_request")
    expectError(await call(gw, "POST", "/v1/media/uploads/complete", { key, body: "upload_ids=1", headers: { "content-type": "text/plain" } }), 415, "unsupported_media_type")
  })

  it("confirmation measures the stored object: a size other than the declared one is refused", async () => {
    const acct = await createAccount(gw, { name: "sizes" })
    const created = await sessions(gw, acct.resource.key, [video(media.v3!)])
    const id = created.body.data[0].id
    // The local store's signature binds the length, so the object is replaced behind its back.
    const [row] = await query<{ storage_key: string }>(gw, (sql) => sql`SELECT storage_key FROM media_uploads WHERE id = ${id}`)
    await gw.runtime.runPromise(Effect.flatMap(ObjectStorage, (s) => s.put(row!.storage_key, media.v8!, "video/mp4")))
    const reply = await complete(gw, acct.resource.key, [id])
    expect(reply.body.data).toEqual([])
    expect(reply.body.errors).toEqual([{ id, code: "upload_size_mismatch", message: expect.stringContaining(`${media.v8!.length} bytes`) }])
  })

  it("task creation applies the famS per-file and total limits to confirmed uploads: 400 before idempotency and charge", async () => {
    const acct = await createAccount(gw, { name: "limits", wallet_credits: 100 })
    const [v2, v3, v8a, v8b, v10a, v10b, v10c, v11, wav] = await uploadAll(gw, acct.resource.key, [
      video(media.v2!),
      video(media.v3!),
      video(media.v8!),
      video(media.v8!),
      video(media.v10!),
      video(media.v10!),
      video(media.v10!),
      video(media.v11!),
      audio(media.wav!, "wav")
    ])
    const create = (json: unknown, headers: Record<string, string> = {}) =>
      call(gw, "POST", "/v1/video/tasks", { key: acct.model.key, json, headers })
    const refused = async (json: unknown, code: string, needle: RegExp) => {
      const reply = await create(json, { "idempotency-key": "limits-key" })
      expectError(reply, 400, code, "invalid_request_error")
      expect(reply.body.error.message).toMatch(needle)
    }

    // An 11 s video: over the 10 s per-file cap of both ranges.
    await refused(mediaTask("provy-famS-2.0-480p", { videos: [v11.url] }), "reference_media_duration_exceeded", /reference_videos\[0\] lasts 11\.0 s.*3 to 10 s/)
    await refused(mediaTask("provy-famS-2.5-480p", { videos: [v11.url] }), "reference_media_duration_exceeded", /11\.0 s/)
    // A 2 s video is under the 3 s minimum.
    await refused(mediaTask("provy-famS-2.0-480p", { videos: [v2.url] }), "invalid_reference_media_duration", /2\.0 s/)
    // Totals: 8 + 8 = 16 s over 15 s for 2.0; 10 + 10 + 8 + 3 = 31 s over 30.2 s for 2.5.
    await refused(mediaTask("provy-famS-2.0-480p", { videos: [v8a.url, v8b.url] }), "reference_media_duration_exceeded", /16\.0 s in all.*15 s/)
    await refused(
      mediaTask("provy-famS-2.5-480p", { videos: [v10a.url, v10b.url, v8a.url, v3.url] }),
      "reference_media_duration_exceeded",
      /31\.0 s in all.*30\.2 s/
    )
    // A confirmed upload of another kind than its field takes.
    await refused(mediaTask("provy-famS-2.5-480p", { videos: [wav.url] }), "invalid_request", /reference_videos\[0\].*audio upload/)

    // Nothing was created or charged, so the Idempotency-Key is still unused.
    expect(await balance(acct.id)).toBe(100)
    expect((await call(gw, "GET", "/v1/video/tasks", { key: acct.resource.key })).body.data).toEqual([])
    // Exactly at the limits: 30 s of video for 2.5, 8 + 3 = 11 s for 2.0 (with audio).
    const ok25 = await create(mediaTask("provy-famS-2.5-480p", { videos: [v10a.url, v10b.url, v10c.url] }), { "idempotency-key": "limits-key" })
    expect(ok25.status).toBe(202)
    expect(ok25.headers.get("idempotent-replayed")).toBeNull()
    const ok20 = await create(mediaTask("provy-famS-2.0-480p", { videos: [v8a.url, v3.url], audios: [wav.url] }))
    expect(ok20.status).toBe(202)
    for (const id of [ok25.body.id, ok20.body.id]) {
      expect((await pollTask(gw, acct.resource.key, id)).at(-1).status).toBe("succeeded")
      expect((await ledgerOf(gw, id)).map((l) => l.kind)).toEqual(["charge"])
    }
  })
})
