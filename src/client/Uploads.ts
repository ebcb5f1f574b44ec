import { FileSystem, HttpClientRequest } from "@effect/platform"
import { Effect, Stream } from "effect"
import { type ConfirmedUpload, MAX_UPLOADS_PER_CALL, type MediaUploadSession } from "../uploads/Upload.ts"
import { GatewayClient } from "./Client.ts"
import { GatewayError, LocalFileError } from "./Errors.ts"
import { describeFile, type LocalFile } from "./LocalFiles.ts"
import { withClient } from "./Tasks.ts"

/** Bytes sent so far, per file and in all. */
export interface UploadProgress {
  readonly file: LocalFile
  readonly sent: number
  readonly sentAll: number
  readonly totalAll: number
}

export interface UploadOptions {
  readonly onProgress?: ((progress: UploadProgress) => void) | undefined
}

/** A confirmed upload (spec: Confirmed upload) with the local file it came from. */
export type Uploaded = ConfirmedUpload & { readonly file: LocalFile }

/** Step 2: the bytes straight to object storage with exactly the session's method and headers. */
const put = (session: MediaUploadSession, file: LocalFile, report: (bytes: number) => void) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const { http } = yield* GatewayClient
    const body = fs.stream(file.path).pipe(
      Stream.tap((chunk) => Effect.sync(() => report(chunk.byteLength))),
      Stream.mapError(() =>
        new LocalFileError({ path: file.path, message: "the file could not be read while uploading" })
      )
    )
    const contentType = Object.entries(session.headers).find(([name]) => name.toLowerCase() === "content-type")?.[1]
    const request = HttpClientRequest.make(session.method)(session.upload_url).pipe(
      // A pre-signed URL binds the length, so the body is sent with it, never chunked.
      HttpClientRequest.bodyStream(body, { contentType: contentType ?? file.mimeType, contentLength: file.size }),
      HttpClientRequest.setHeaders(session.headers)
    )
    const response = yield* http.execute(request)
    yield* Effect.ignore(response.text)
  })

/**
 * Step 3's 200 answer must confirm every id, in order. A refusal normally
 * arrives as an error answer (all or nothing), already a `GatewayError`;
 * a 200 that leaves an id out fails as well, with the code of its `errors`
 * entry when a gateway of the older partial form lists one.
 */
const confirmedInOrder = (
  sessions: ReadonlyArray<MediaUploadSession>,
  answer: {
    readonly data: ReadonlyArray<ConfirmedUpload>
    readonly errors?: ReadonlyArray<{ id: string; code: string; message: string }>
  },
  files: ReadonlyArray<LocalFile>
) => {
  const byId = new Map(answer.data.map((item) => [item.id, item]))
  const out: Array<Uploaded> = []
  for (const [i, session] of sessions.entries()) {
    const item = byId.get(session.id)
    if (item !== undefined) {
      out.push({ ...item, file: files[i]! })
      continue
    }
    const refused = answer.errors?.find((e) => e.id === session.id)
    return Effect.fail(
      new GatewayError({
        status: 200,
        type: "invalid_request_error",
        code: refused?.code ?? "upload_not_confirmed",
        message: `${files[i]!.path}: ${refused?.message ?? `upload ${session.id} was not confirmed`}`,
        request_id: null
      })
    )
  }
  return Effect.succeed(out)
}

const uploadBatch = (files: ReadonlyArray<LocalFile>, done: number, total: number, options: UploadOptions) =>
  Effect.gen(function*() {
    const created = yield* withClient((c) =>
      c.uploads.createMediaUploads({
        payload: {
          files: files.map((file, i) => ({
            client_id: String(done + i),
            kind: file.kind,
            filename: file.filename,
            mime_type: file.mimeType,
            size_bytes: file.size
          }))
        }
      }), "resource")
    let sentAll = 0
    for (const [i, session] of created.data.entries()) {
      const file = files[i]!
      let sent = 0
      yield* put(session, file, (bytes) => {
        sent += bytes
        sentAll += bytes
        options.onProgress?.({ file, sent, sentAll: done + sentAll, totalAll: total })
      })
    }
    const answer = yield* withClient(
      (c) => c.uploads.completeMediaUploads({ payload: { upload_ids: created.data.map((s) => s.id) } }),
      "resource"
    )
    return yield* confirmedInOrder(created.data, answer, files)
  })

/**
 * Uploads local files (PNG, JPEG, WebP, MP4, MOV, MP3, WAV) through the
 * three-step flow: sessions, PUT with exactly the returned headers,
 * confirmation. Returns the confirmed uploads in the order given; their
 * `url` goes into `reference_images`, `reference_videos` or
 * `reference_audios`. Files are checked before anything is sent.
 */
export const uploadFiles = (paths: ReadonlyArray<string>, options: UploadOptions = {}) =>
  Effect.gen(function*() {
    const files = yield* Effect.forEach(paths, describeFile)
    const total = files.reduce((sum, f) => sum + f.size, 0)
    const out: Array<Uploaded> = []
    let done = 0
    for (let start = 0; start < files.length; start += MAX_UPLOADS_PER_CALL) {
      const batch = files.slice(start, start + MAX_UPLOADS_PER_CALL)
      out.push(...(yield* uploadBatch(batch, done, total, options)))
      done += batch.reduce((sum, f) => sum + f.size, 0)
    }
    return out
  })
