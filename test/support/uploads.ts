import ffmpeg from "@ffmpeg-installer/ffmpeg"
import { execFile } from "node:child_process"
import { mkdtempSync, readFileSync, rmSync } from "node:fs"
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import type { ConfirmedUpload } from "../../src/uploads/Upload.ts"
import { api } from "./api.ts"
import { raw, type RawReply, type Target } from "./http.ts"

const exec = promisify(execFile)

/** Runs ffmpeg with `args` writing `name` in a fresh directory; returns the file's bytes. */
const render = async (name: string, args: ReadonlyArray<string>): Promise<Uint8Array> => {
  const dir = mkdtempSync(join(tmpdir(), "gw-upload-media-"))
  try {
    const file = join(dir, name)
    await exec(ffmpeg.path, ["-v", "error", ...args, "-y", file])
    return new Uint8Array(readFileSync(file))
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

/** A real H.264 clip of exactly `seconds` (10 fps, tiny frame), with an AAC track when `audio`. */
export const makeVideo = (
  seconds: number,
  options: { audio?: boolean; container?: "mp4" | "mov"; size?: string } = {}
) =>
  render(`clip.${options.container ?? "mp4"}`, [
    "-f",
    "lavfi",
    "-i",
    `testsrc=size=${options.size ?? "96x64"}:rate=10:duration=${seconds}`,
    ...(options.audio
      ? ["-f", "lavfi", "-i", `sine=frequency=440:duration=${seconds}`, "-c:a", "aac", "-shortest"]
      : []),
    "-c:v",
    "libx264",
    "-preset",
    "ultrafast",
    "-pix_fmt",
    "yuv420p",
    ...(options.container === "mov" ? [] : ["-movflags", "+faststart"])
  ])

export const makeAudio = (format: "wav" | "mp3", seconds: number) =>
  render(`tone.${format}`, [
    "-f",
    "lavfi",
    "-i",
    `sine=frequency=330:duration=${seconds}`,
    ...(format === "wav" ? ["-ac", "1", "-ar", "16000"] : [])
  ])

export const makeImage = (format: "png" | "jpg" | "webp", size = "64x48") =>
  render(`still.${format}`, ["-f", "lavfi", "-i", `testsrc=size=${size}:rate=1`, "-frames:v", "1"])

export interface UploadFile {
  readonly kind: "image" | "video" | "audio"
  readonly filename: string
  readonly mime_type: string
  readonly bytes: Uint8Array
  /** Declared size; the real one by default. */
  readonly size_bytes?: number
}

/** The files as step 1 declares them. */
const described = (files: ReadonlyArray<UploadFile>) =>
  files.map((f, i) => ({
    client_id: `c${i}`,
    kind: f.kind,
    filename: f.filename,
    mime_type: f.mime_type,
    size_bytes: f.size_bytes ?? f.bytes.length
  }))

/** Step 1 through the typed client: the pre-signed sessions, in order. */
export const createSessions = (gw: Target, key: string, files: ReadonlyArray<UploadFile>) =>
  api(gw, { resource: key }).client((c) =>
    c.resource.uploads.createMediaUploads({ payload: { files: described(files) } })
  ).then((r) => r.data)

/** Step 1 sent as it is, for tests of what it refuses (their error body is the point). */
export const rawSessions = (gw: Target, key: string, files: ReadonlyArray<UploadFile>): Promise<RawReply> =>
  raw(gw, "POST", "/v1/media/uploads", { key, json: { files: described(files) } })

/** Step 2: the bytes straight to storage by plain fetch, with exactly the returned method and headers. */
export const putBytes = async (
  session: { readonly upload_url: string; readonly method: string; readonly headers: Record<string, string> },
  bytes: Uint8Array
): Promise<number> => {
  const res = await fetch(session.upload_url, {
    method: session.method,
    headers: session.headers,
    body: bytes as BodyInit
  })
  await res.arrayBuffer()
  return res.status
}

/** Step 3 through the typed client: the confirmed uploads, in order; a refusal rejects with `GatewayError`. */
export const confirm = (gw: Target, key: string, ids: ReadonlyArray<string>) =>
  api(gw, { resource: key }).client((c) => c.resource.uploads.completeMediaUploads({ payload: { upload_ids: ids } }))
    .then((r) => r.data)

/** Step 3 sent as it is, where its error body is the point. */
export const rawComplete = (gw: Target, key: string, ids: ReadonlyArray<string>): Promise<RawReply> =>
  raw(gw, "POST", "/v1/media/uploads/complete", { key, json: { upload_ids: ids } })

/**
 * All three steps through the typed client (the PUT by plain fetch, as any
 * client does); rejects unless every file is confirmed. The confirmed items
 * in order.
 */
export const uploadAll = async (
  gw: Target,
  key: string,
  files: ReadonlyArray<UploadFile>
): Promise<ReadonlyArray<ConfirmedUpload>> => {
  const created = await createSessions(gw, key, files)
  for (const [i, session] of created.entries()) {
    const status = await putBytes(session, files[i]!.bytes)
    if (status !== 200) throw new Error(`PUT ${i}: ${status}`)
  }
  return confirm(gw, key, created.map((s) => s.id))
}

export const video = (bytes: Uint8Array, filename = "clip.mp4"): UploadFile => ({
  kind: "video",
  filename,
  mime_type: "video/mp4",
  bytes
})
export const audio = (bytes: Uint8Array, format: "wav" | "mp3"): UploadFile => ({
  kind: "audio",
  filename: `tone.${format}`,
  mime_type: format === "wav" ? "audio/wav" : "audio/mpeg",
  bytes
})
export const image = (bytes: Uint8Array): UploadFile => ({
  kind: "image",
  filename: "still.png",
  mime_type: "image/png",
  bytes
})

type Route =
  /** `chunked` leaves Content-Length out, so only counting the body can find its size. */
  | { readonly body: Uint8Array; readonly type?: string; readonly chunked?: boolean }
  | { readonly redirect: string; readonly status?: number }
  | { readonly status: number }

/** A plain HTTP server on loopback standing for an external host of reference media; counts requests per path. */
export const startMediaServer = async (routes: Record<string, Route> = {}) => {
  const hits = new Map<string, number>()
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const path = (req.url ?? "/").split("?")[0]!
    hits.set(path, (hits.get(path) ?? 0) + 1)
    const route = routes[path]
    if (route === undefined) {
      res.writeHead(404).end("not found")
    } else if ("body" in route) {
      res.writeHead(200, {
        "content-type": route.type ?? "application/octet-stream",
        ...(route.chunked ? {} : { "content-length": route.body.length })
      })
      res.end(route.body)
    } else if ("redirect" in route) {
      res.writeHead(route.status ?? 302, { location: route.redirect }).end()
    } else {
      res.writeHead(route.status).end("no")
    }
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    routes,
    hits,
    close: () => new Promise<void>((resolve) => server.close(() => resolve()))
  }
}
