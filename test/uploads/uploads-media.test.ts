import { Chunk, Effect, Option, Schema, Stream } from "effect"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { VideoTaskRequest } from "../../src/client/Tasks.ts"
import { ObjectStorage } from "../../src/storage/ObjectStorage.ts"
import { type MediaUploadFile, MediaUploadList, MediaUploadSessionList } from "../../src/uploads/Upload.ts"
import { createAccount, operator } from "../support/adminApi.ts"
import { api } from "../support/api.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { startGateway, type TestGateway } from "../support/gateway.ts"
import { errorOf, expectError, raw, type RawReply } from "../support/http.ts"
import { probeBytes } from "../support/media.ts"
import { randomBytes } from "../support/storage.ts"
import { ledgerOf, query } from "../support/tasks.ts"
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
  rawSessions,
  uploadAll,
  type UploadFile,
  video
} from "../support/uploads.ts"

// The answers of steps 1 and 3, decoded with the contract's schemas from a raw answer whose exact fields are checked.
const sessionsOf = (reply: RawReply) => Schema.decodeUnknownSync(MediaUploadSessionList)(reply.body)
const uploadsOf = (reply: RawReply) => Schema.decodeUnknownSync(MediaUploadList)(reply.body)

/** The parts of the OpenAPI document these tests read. */
interface SchemaObject {
  readonly $ref?: string
  readonly properties?: Record<string, unknown>
}
interface OpenApiDocument {
  readonly paths: Record<
    string,
    Record<
      string,
      { readonly responses: Record<string, { readonly content: Record<string, { schema: SchemaObject }> }> }
    >
  >
  readonly components: { readonly schemas: Record<string, SchemaObject> }
}
const openApi = async (gw: TestGateway) => {
  const reply = await raw(gw, "GET", "/openapi.json")
  expect(reply.status).toBe(200)
  expect(typeof reply.body).toBe("object")
  return reply.body as OpenApiDocument
}

/**
 * The three-step direct upload on the local object store, with the engine
 * running (ROLE=all): sessions, bytes PUT by plain fetch, confirmation by
 * inspection, and the confirmed URLs used in famS media-mode tasks. Every
 * refusal is checked where it happens: at session creation, at confirmation
 * (all or nothing), and at task creation (400 before idempotency and charge).
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

const balance = async (accountId: string) => (await operator(gw).account(accountId)).wallet_credits

const mediaTask = (
  model: string,
  refs: { images?: Array<string>; videos?: Array<string>; audios?: Array<string> },
  duration = 4
): VideoTaskRequest => ({
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
    // Raw: the exact fields of each session are the point.
    const reply = await rawSessions(gw, acct.resource.key, files)
    expect(reply.status).toBe(200)
    const created = sessionsOf(reply)
    expect(reply.body).toEqual(created)
    expect(created.object).toBe("media.upload.session.list")
    expect(created.data).toHaveLength(4)
    for (const [i, session] of created.data.entries()) {
      expect(Object.keys(session).sort()).toEqual([
        "client_id",
        "expires_at",
        "headers",
        "id",
        "kind",
        "method",
        "upload_url"
      ])
      expect(session).toMatchObject({ client_id: `c${i}`, kind: files[i]!.kind, method: "PUT" })
      expect(session.id).toMatch(/^upl_[0-9A-Za-z]{22}$/)
      expect(session.headers).toEqual({ "Content-Type": files[i]!.mime_type })
      expect(Math.abs(session.expires_at - (nowS() + 900))).toBeLessThanOrEqual(5)
    }
    const ids = created.data.map((s) => s.id)

    // Step 2: the bytes, by plain HTTP, straight to storage.
    for (const [i, session] of created.data.entries()) {
      expect(await putBytes(session, files[i]!.bytes)).toBe(200)
    }

    // Step 3: confirmed from the stored bytes.
    // Raw: the exact fields of each confirmed item are the point.
    const confirmedReply = await rawComplete(gw, acct.resource.key, ids)
    expect(confirmedReply.status).toBe(200)
    const confirmed = uploadsOf(confirmedReply)
    expect(confirmedReply.body).toEqual(confirmed)
    expect(confirmed.object).toBe("media.upload.list")
    expect(confirmed.data.map((d) => d.id)).toEqual(ids)
    const types = ["video/mp4", "audio/wav", "audio/mpeg", "image/png"]
    for (const [i, item] of confirmed.data.entries()) {
      expect(Object.keys(item).sort()).toEqual([
        "client_id",
        "expires_at",
        "id",
        "kind",
        "mime_type",
        "size_bytes",
        "temporary",
        "url"
      ])
      expect(item).toMatchObject({
        client_id: `c${i}`,
        kind: files[i]!.kind,
        mime_type: types[i],
        size_bytes: files[i]!.bytes.length,
        temporary: true
      })
      expect(Math.abs(item.expires_at - (nowS() + 86_400))).toBeLessThanOrEqual(5)
      // The confirmed URL serves exactly the uploaded bytes, with the verified type, and needs no key.
      const download = await fetch(item.url)
      expect(download.status).toBe(200)
      expect(download.headers.get("content-type")).toBe(types[i])
      expect(Buffer.from(await download.arrayBuffer()).equals(Buffer.from(files[i]!.bytes))).toBe(true)
    }
    // Confirming again answers the same confirmed items.
    const again = await confirm(gw, acct.resource.key, ids)
    expect(again).toEqual(confirmed.data)

    const [mp4, wav, mp3, png] = confirmed.data.map((d) => d.url)
    const task = await api(gw, acct).createVideo(
      mediaTask("provy-famS-2.5-480p", { images: [png!], videos: [mp4!], audios: [wav!, mp3!] })
    )
    const done = (await api(gw, acct).waitTask("video", task.id)).at(-1)!
    expect(done).toMatchObject({ status: "succeeded", error: null })
    const result = await probeBytes(new Uint8Array(await (await fetch(done.result!.videos[0]!.url)).arrayBuffer()))
    expect(result.video).toMatchObject({ codec: "h264", width: 854, height: 480 })
    expect(Math.abs(result.durationS - 4)).toBeLessThan(0.1)
  })

  it("session creation refuses what no model accepts, naming the file, and signs nothing", async () => {
    const acct = await createAccount(gw, { name: "sessions" })
    const key = acct.resource.key
    const file = (over: Record<string, unknown>) => ({
      client_id: "a",
      kind: "video",
      filename: "a.mp4",
      mime_type: "video/mp4",
      size_bytes: 1000,
      ...over
    })
    const refused = async (files: Array<unknown>, needle: string | RegExp) => {
      const reply = await raw(gw, "POST", "/v1/media/uploads", { key, json: { files } })
      expectError(reply, 400, "invalid_request", "invalid_request_error")
      expect(errorOf(reply.body)?.message).toMatch(needle)
    }
    // Per-file caps of the famS table: 200 MB video, 15 MB audio, 20 MB image.
    await refused([file({}), file({ size_bytes: 200_000_001 })], /files\[1\]\.size_bytes.*200000000/)
    await refused(
      [file({ kind: "audio", mime_type: "audio/mpeg", filename: "a.mp3", size_bytes: 15_000_001 })],
      /15000000/
    )
    await refused(
      [file({ kind: "image", mime_type: "image/png", filename: "a.png", size_bytes: 20_000_001 })],
      /20000000/
    )
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
    expect(
      (await query(
        gw,
        (sql) => sql`SELECT m.id FROM media_uploads m JOIN accounts a ON a.id = m.account_id WHERE a.name = 'sessions'`
      )).length
    ).toBe(0)

    // Twelve at the limits are fine; spellings of the same type are normalised into the signed header.
    // A 200: the typed client decodes the contract's answer or fails.
    const okFile = (over: Partial<MediaUploadFile>): MediaUploadFile => ({
      client_id: "a",
      kind: "video",
      filename: "a.mp4",
      mime_type: "video/mp4",
      size_bytes: 1000,
      ...over
    })
    const ok = await api(gw, { resource: key }).client((c) =>
      c.resource.uploads.createMediaUploads({
        payload: {
          files: [
            okFile({ size_bytes: 200_000_000 }),
            okFile({ kind: "audio", mime_type: "audio/x-wav", filename: "a.wav", size_bytes: 15_000_000 }),
            okFile({ kind: "image", mime_type: "image/jpg", filename: "a.jpg", size_bytes: 20_000_000 }),
            ...Array.from({ length: 9 }, () => okFile({ mime_type: "video/quicktime", filename: "b.mov" }))
          ]
        }
      })
    )
    expect(ok.data).toHaveLength(12)
    expect(ok.data[1]!.headers).toEqual({ "Content-Type": "audio/wav" })
    expect(ok.data[2]!.headers).toEqual({ "Content-Type": "image/jpeg" })

    const doc = await openApi(gw)
    expect(Object.keys(doc.paths)).toEqual(expect.arrayContaining([
      "/v1/media/uploads",
      "/v1/media/uploads/complete",
      "/v1/image/uploads",
      "/v1/image/uploads/base64"
    ]))

    // Resource keys only.
    expectError(
      await raw(gw, "POST", "/v1/media/uploads", { key: acct.model.key, json: { files: [file({})] } }),
      403,
      "permission_denied"
    )
    expectError(await raw(gw, "POST", "/v1/media/uploads", { json: { files: [file({})] } }), 401, "invalid_api_key")
  })

  it("confirmation is all or nothing: the first refused id answers with the spec's error naming it, and none is confirmed", async () => {
    const acct = await createAccount(gw, { name: "confirm" })
    const other = await createAccount(gw, { name: "other" })
    const key = acct.resource.key
    const [othersUpload] = await uploadAll(gw, other.resource.key, [image(media.png!)])

    const truncated = media.mp4!.subarray(0, Math.floor(media.mp4!.length * 0.6))
    const good: Array<UploadFile> = [video(media.v3!), audio(media.wav!, "wav"), image(media.png!), video(media.v8!)]
    const bad: Array<[string, UploadFile, number, string, RegExp?]> = [
      // A PNG named .mp4 and declared as an MP4 video.
      [
        "png as mp4",
        { kind: "video", filename: "holiday.mp4", mime_type: "video/mp4", bytes: media.png! },
        400,
        "invalid_upload_content",
        /PNG image \(image\/png\).*video/
      ],
      // A JPEG declared as a PNG: right kind, contradicting type.
      [
        "jpeg as png",
        { kind: "image", filename: "photo.png", mime_type: "image/png", bytes: media.jpg! },
        400,
        "invalid_upload_content"
      ],
      // An MP3 declared as WAV.
      [
        "mp3 as wav",
        { kind: "audio", filename: "tone.wav", mime_type: "audio/wav", bytes: media.mp3! },
        400,
        "invalid_upload_content"
      ],
      // An MP4 cut after 60 %: the header is there, the samples are not.
      [
        "cut mp4",
        { kind: "video", filename: "cut.mp4", mime_type: "video/mp4", bytes: truncated },
        400,
        "invalid_reference_media_duration"
      ],
      // MP4 signature, then noise.
      [
        "noise mp4",
        {
          kind: "video",
          filename: "noise.mp4",
          mime_type: "video/mp4",
          bytes: Buffer.concat([media.mp4!.subarray(0, 40), randomBytes(5000)])
        },
        400,
        "invalid_reference_media_duration"
      ],
      // Text.
      [
        "text as mp3",
        {
          kind: "audio",
          filename: "noise.mp3",
          mime_type: "audio/mpeg",
          bytes: new TextEncoder().encode("not media ".repeat(300))
        },
        400,
        "invalid_upload_content"
      ]
    ]
    // A 200: the typed client decodes the contract's answer or fails.
    const created = await createSessions(gw, key, [...good, ...bad.map(([, file]) => file), video(media.v2!)])
    const ids = created.map((s) => s.id)
    const goodIds = ids.slice(0, good.length)
    const badIds = ids.slice(good.length, good.length + bad.length)
    const neverPut = ids.at(-1)!
    const files = [...good, ...bad.map(([, file]) => file)]
    for (const [i, session] of created.slice(0, files.length).entries()) {
      expect(await putBytes(session, files[i]!.bytes)).toBe(200)
    }

    const statuses = async () =>
      (await query<{ id: string; status: string }>(
        gw,
        (sql) => sql`SELECT id, status FROM media_uploads WHERE ${sql.in("id", ids)}`
      ))
        .filter((r) => r.status !== "pending").map((r) => r.id)
    const refused = async (batch: Array<string>, status: number, code: string, named: string, message?: RegExp) => {
      const reply = await rawComplete(gw, key, batch)
      expectError(reply, status, code)
      const said = errorOf(reply.body)?.message
      expect(said).toContain(named)
      // Messages are for the caller: no temporary paths or tool names.
      expect(said).not.toMatch(/\/tmp|ffprobe|file:/)
      if (message) expect(said).toMatch(message)
      expect(Object.keys(reply.body as object)).toEqual(["error"])
    }

    // Each refusal, placed third of five between uploads that pass: the call fails and none is confirmed.
    for (const [i, [name, , status, code, message]] of bad.entries()) {
      await refused([goodIds[0]!, goodIds[1]!, badIds[i]!, goodIds[2]!, goodIds[3]!], status, code, badIds[i]!, message)
      expect(await statuses(), name).toEqual([])
    }
    const unknown = "upl_000000000000000000000x"
    await refused([goodIds[0]!, unknown], 404, "upload_not_found", unknown)
    await refused([goodIds[0]!, othersUpload.id], 404, "upload_not_found", othersUpload.id)
    await refused([goodIds[0]!, neverPut], 409, "upload_not_received", neverPut, /PUT the file/)
    expectError(await rawComplete(gw, key, [neverPut]), 409, "upload_not_received", "conflict_error")
    // In request order: the first refused id answers.
    await refused([badIds[3]!, badIds[0]!], 400, "invalid_reference_media_duration", badIds[3]!)
    await refused([badIds[0]!, badIds[3]!], 400, "invalid_upload_content", badIds[0]!)
    expect(await statuses()).toEqual([])
    // No copy made by a refused call is left behind.
    expect(await query(gw, (sql) => sql`SELECT storage_key FROM media_upload_pins WHERE ${sql.in("upload_id", ids)}`))
      .toEqual([])

    // The good ones alone are confirmed, in request order; again with a refused one, the call fails and they stay confirmed.
    // Raw: the exact fields of the answer are the point.
    const okReply = await rawComplete(gw, key, [goodIds[3]!, goodIds[0]!, goodIds[2]!, goodIds[1]!, goodIds[0]!])
    expect(okReply.status).toBe(200)
    const ok = uploadsOf(okReply)
    expect(Object.keys(okReply.body as object).sort()).toEqual(["data", "object"])
    expect(ok.data.map((d) => d.id)).toEqual([goodIds[3], goodIds[0], goodIds[2], goodIds[1]])
    expect((await statuses()).sort()).toEqual([...goodIds].sort())
    await refused([goodIds[0]!, badIds[0]!], 400, "invalid_upload_content", badIds[0]!)
    // Confirming confirmed ids again answers them again, also together with one confirmed now.
    const [late] = await createSessions(gw, key, [image(media.png!)])
    expect(await putBytes(late!, media.png!)).toBe(200)
    // A 200: the typed client decodes the contract's answer or fails.
    const again = await confirm(gw, key, [goodIds[1]!, late!.id])
    expect(again[0]).toEqual(ok.data[3])
    expect(again[1]).toMatchObject({ id: late!.id, kind: "image", mime_type: "image/png" })

    // The body itself: 1 to 12 ids, JSON only.
    expectError(await rawComplete(gw, key, []), 400, "invalid_request")
    expectError(await rawComplete(gw, key, Array.from({ length: 13 }, (_, i) => `upl_${i}`)), 400, "invalid_request")
    expectError(
      await raw(gw, "POST", "/v1/media/uploads/complete", {
        key,
        body: "upload_ids=1",
        headers: { "content-type": "text/plain" }
      }),
      415,
      "unsupported_media_type"
    )

    // The contract says so too: the answer has no per-item errors.
    const doc = await openApi(gw)
    const resolve = (schema: SchemaObject | undefined): SchemaObject | undefined =>
      schema?.$ref ? resolve(doc.components.schemas[schema.$ref.split("/").at(-1)!]) : schema
    const answer = resolve(
      doc.paths["/v1/media/uploads/complete"]?.post?.responses["200"]?.content["application/json"]?.schema
    )
    expect(Object.keys(answer?.properties ?? {}).sort()).toEqual(["data", "object"])
  })

  it("confirmation measures the stored object: a size other than the declared one is refused", async () => {
    const acct = await createAccount(gw, { name: "sizes" })
    const [created] = await createSessions(gw, acct.resource.key, [video(media.v3!)])
    const id = created!.id
    // The local store's signature binds the length, so the object is replaced behind its back.
    const [row] = await query<{ storage_key: string }>(
      gw,
      (sql) => sql`SELECT storage_key FROM media_uploads WHERE id = ${id}`
    )
    await gw.runtime.runPromise(Effect.flatMap(ObjectStorage, (s) => s.put(row!.storage_key, media.v8!, "video/mp4")))
    const reply = await rawComplete(gw, acct.resource.key, [id])
    expectError(reply, 400, "upload_size_mismatch")
    expect(errorOf(reply.body)?.message).toContain(id)
    expect(errorOf(reply.body)?.message).toContain(`${media.v8!.length} bytes`)
  })

  it("confirmation pins the bytes: a second PUT through the still valid upload_url never reaches the confirmed URL", async () => {
    const acct = await createAccount(gw, { name: "pinning" })
    const key = acct.resource.key
    const [session] = await createSessions(gw, key, [image(media.png!)])
    expect(await putBytes(session!, media.png!)).toBe(200)
    const [confirmed] = await confirm(gw, key, [session!.id])
    // Other bytes of the same signed type and length, never inspected.
    const other = randomBytes(media.png!.length)
    expect(await putBytes(session!, other)).toBe(200)
    const [row] = await query<{ storage_key: string; pinned_key: string }>(
      gw,
      (sql) => sql`SELECT storage_key, pinned_key FROM media_uploads WHERE id = ${session!.id}`
    )
    expect(row!.pinned_key).not.toBe(row!.storage_key)
    // The PUT did land (at the session's key)...
    const atPutKey = await gw.runtime.runPromise(
      Effect.flatMap(ObjectStorage, (s) => s.read(row!.storage_key)).pipe(
        Effect.flatMap((o) => Stream.runCollect(Option.getOrThrow(o).body)),
        Effect.map((chunks) => Buffer.concat(Chunk.toReadonlyArray(chunks)))
      )
    )
    expect(atPutKey.equals(Buffer.from(other))).toBe(true)
    // ...but the confirmed URL, now and after confirming again, serves what was inspected.
    const [again] = await confirm(gw, key, [session!.id])
    expect(again!.url).toBe(confirmed!.url)
    for (const url of [confirmed!.url, again!.url]) {
      const download = await fetch(url)
      expect(download.status).toBe(200)
      expect(download.headers.get("content-type")).toBe("image/png")
      expect(Buffer.from(await download.arrayBuffer()).equals(Buffer.from(media.png!))).toBe(true)
    }
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
    const create = (request: VideoTaskRequest, idempotencyKey?: string) =>
      api(gw, acct).createVideoReply(request, { idempotencyKey })
    const refused = async (json: unknown, code: string, needle: RegExp) => {
      const reply = await raw(gw, "POST", "/v1/video/tasks", {
        key: acct.model.key,
        json,
        headers: { "idempotency-key": "limits-key" }
      })
      expectError(reply, 400, code, "invalid_request_error")
      expect(errorOf(reply.body)?.message).toMatch(needle)
    }

    // An 11 s video: over the 10 s per-file cap of both ranges.
    await refused(
      mediaTask("provy-famS-2.0-480p", { videos: [v11.url] }),
      "reference_media_duration_exceeded",
      /reference_videos\[0\] lasts 11\.0 s.*3 to 10 s/
    )
    await refused(
      mediaTask("provy-famS-2.5-480p", { videos: [v11.url] }),
      "reference_media_duration_exceeded",
      /11\.0 s/
    )
    // A 2 s video is under the 3 s minimum.
    await refused(mediaTask("provy-famS-2.0-480p", { videos: [v2.url] }), "invalid_reference_media_duration", /2\.0 s/)
    // Totals: 8 + 8 = 16 s over 15 s for 2.0; 10 + 10 + 8 + 3 = 31 s over 30.2 s for 2.5.
    await refused(
      mediaTask("provy-famS-2.0-480p", { videos: [v8a.url, v8b.url] }),
      "reference_media_duration_exceeded",
      /16\.0 s in all.*15 s/
    )
    await refused(
      mediaTask("provy-famS-2.5-480p", { videos: [v10a.url, v10b.url, v8a.url, v3.url] }),
      "reference_media_duration_exceeded",
      /31\.0 s in all.*30\.2 s/
    )
    // A confirmed upload of another kind than its field takes.
    await refused(
      mediaTask("provy-famS-2.5-480p", { videos: [wav.url] }),
      "invalid_request",
      /reference_videos\[0\].*audio upload/
    )

    // Nothing was created or charged, so the Idempotency-Key is still unused.
    expect(await balance(acct.id)).toBe(100)
    expect((await api(gw, acct).listVideos()).data).toEqual([])
    // Exactly at the limits: 30 s of video for 2.5, 8 + 3 = 11 s for 2.0 (with audio).
    const ok25 = await create(
      mediaTask("provy-famS-2.5-480p", { videos: [v10a.url, v10b.url, v10c.url] }),
      "limits-key"
    )
    expect(ok25.status).toBe(202)
    expect(ok25.headers["idempotent-replayed"]).toBeUndefined()
    const ok20 = await create(mediaTask("provy-famS-2.0-480p", { videos: [v8a.url, v3.url], audios: [wav.url] }))
    expect(ok20.status).toBe(202)
    for (const id of [ok25.task.id, ok20.task.id]) {
      expect((await api(gw, acct).waitTask("video", id)).at(-1)?.status).toBe("succeeded")
      expect((await ledgerOf(gw, id)).map((l) => l.kind)).toEqual(["charge"])
    }
  })
})
