import ffmpeg from "@ffmpeg-installer/ffmpeg"
import { execFile } from "node:child_process"
import { mkdtempSync, readFileSync } from "node:fs"
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http"
import type { Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { listenOnLoopback, multipartParts } from "../support/fakeServer.ts"

/**
 * A fake OpenAI Images API on loopback (docs/adapters/openai-images.md, Tests):
 * the synchronous `POST /v1/images/generations` (JSON) and
 * `POST /v1/images/edits` (multipart with `image` or `image[]` and `mask`),
 * answering real images of the requested size and format as `data[].b64_json`,
 * with the faults a gateway meets in production, chosen per request by the
 * test.
 */

export type Fault =
  | {
    readonly kind: "status"
    readonly status: number
    readonly headers?: Record<string, string>
    readonly body?: string
  }
  /** 429 as OpenAI sends it; `retryAfter` in seconds and/or `retryAfterMs`. */
  | { readonly kind: "rate_limited"; readonly retryAfter?: string; readonly retryAfterMs?: string }
  /** A 5xx with an HTML page, as a load balancer in front of the API sends. */
  | { readonly kind: "html"; readonly status: number }
  /** The safety system refuses the prompt (input) or the picture it made (output). */
  | { readonly kind: "moderation"; readonly stage: "input" | "output" }
  /** Answers, but only after this long. */
  | { readonly kind: "slow"; readonly ms: number }
  /** Never answers. */
  | { readonly kind: "hang" }
  /** Reads the request, then drops the connection: the sender cannot know whether it was accepted. */
  | { readonly kind: "reset" }
  /** A 200 whose base64 is cut short. */
  | { readonly kind: "truncated" }

export interface ImagesRequest {
  /** Milliseconds since the epoch when the request had arrived. */
  readonly at: number
  readonly path: string
  readonly headers: IncomingHttpHeaders
  /** Text fields (JSON members or form fields). */
  readonly fields: Record<string, unknown>
  /** Form files by field name: their bytes. */
  readonly files: Record<string, ReadonlyArray<Uint8Array>>
}

export interface FakeImages {
  readonly url: string
  readonly requests: Array<ImagesRequest>
  /** Faults for the next requests, in order; each is used once. */
  readonly faults: Array<Fault>
  readonly close: () => Promise<void>
}

const SIZES = new Set(["1024x1024", "1536x1024", "1024x1536", "512x512", "auto"])
const QUALITIES = new Set(["low", "medium", "high", "auto"])
const FORMATS = new Set(["png", "jpeg", "webp"])

const exec = promisify(execFile)
const scratch = mkdtempSync(join(tmpdir(), "fake-images-"))
const rendered = new Map<string, Promise<Uint8Array>>()

/** A real picture of that size and format, made once per pair by ffmpeg. */
const picture = (size: string, format: string) => {
  const key = `${size}.${format}`
  if (!rendered.has(key)) {
    const file = join(scratch, `out-${key}`)
    rendered.set(
      key,
      exec(ffmpeg.path, ["-v", "error", "-f", "lavfi", "-i", `testsrc2=size=${size}`, "-frames:v", "1", "-y", file])
        .then(() => new Uint8Array(readFileSync(file)))
    )
  }
  return rendered.get(key)!
}

/** Width, height and PNG colour type from the IHDR chunk; undefined when not a PNG. */
const pngHeader = (bytes: Uint8Array) => {
  const signature = [137, 80, 78, 71, 13, 10, 26, 10]
  if (bytes.length < 26 || signature.some((b, i) => bytes[i] !== b)) return undefined
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  return { width: view.getUint32(16), height: view.getUint32(20), colourType: bytes[25]! }
}

const openAiError = (
  res: ServerResponse,
  status: number,
  error: Record<string, unknown>,
  headers: Record<string, string> = {}
) =>
  res.writeHead(status, { "content-type": "application/json", "x-request-id": `req_fake_${Date.now()}`, ...headers })
    .end(JSON.stringify({ error: { param: null, ...error } }))

const invalid = (res: ServerResponse, message: string, param: string | null = null) =>
  openAiError(res, 400, { type: "invalid_request_error", code: "invalid_value", message, param })

const readRequest = async (path: string, headers: IncomingHttpHeaders, body: Buffer): Promise<ImagesRequest> => {
  const parts = await multipartParts("POST", path, headers, body)
  if (parts === undefined) {
    return { at: Date.now(), path, headers, fields: JSON.parse(body.toString("utf8") || "{}"), files: {} }
  }
  const fields: Record<string, unknown> = {}
  const files: Record<string, Array<Uint8Array>> = {}
  for (const [name, value] of parts) {
    if (typeof value === "string") fields[name] = value
    else (files[name] ??= []).push(value)
  }
  return { at: Date.now(), path, headers, fields, files }
}

export const startFakeImages = async (apiKey: string): Promise<FakeImages> => {
  const requests: Array<ImagesRequest> = []
  const faults: Array<Fault> = []

  const answer = async (request: ImagesRequest, res: ServerResponse, socket: Socket) => {
    if (request.headers.authorization !== `Bearer ${apiKey}`) {
      return openAiError(res, 401, {
        type: "invalid_request_error",
        code: "invalid_api_key",
        message: "Incorrect API key provided."
      })
    }
    const fault = faults.shift()
    if (fault?.kind === "hang") return
    if (fault?.kind === "reset") return socket.destroy()
    if (fault?.kind === "slow") await new Promise((r) => setTimeout(r, fault.ms))
    if (fault?.kind === "status") return res.writeHead(fault.status, fault.headers ?? {}).end(fault.body ?? "")
    if (fault?.kind === "html") {
      return res.writeHead(fault.status, { "content-type": "text/html" }).end(
        "<html><body><h1>Bad gateway</h1></body></html>"
      )
    }
    if (fault?.kind === "rate_limited") {
      const headers: Record<string, string> = { "x-ratelimit-remaining-requests": "0" }
      if (fault.retryAfter !== undefined) headers["retry-after"] = fault.retryAfter
      if (fault.retryAfterMs !== undefined) headers["retry-after-ms"] = fault.retryAfterMs
      return openAiError(
        res,
        429,
        { type: "requests", code: "rate_limit_exceeded", message: "Rate limit reached." },
        headers
      )
    }
    if (fault?.kind === "moderation") {
      return openAiError(res, 400, {
        type: "image_generation_user_error",
        code: "moderation_blocked",
        message: "Your request was rejected by the safety system.",
        moderation_details: { moderation_stage: fault.stage, categories: ["violence"] }
      })
    }

    const { fields, files } = request
    if (typeof fields.prompt !== "string" || fields.prompt.length === 0) {
      return invalid(res, "prompt is required", "prompt")
    }
    if (typeof fields.model !== "string") return invalid(res, "model is required", "model")
    const n = Number(fields.n ?? 1)
    if (!Number.isInteger(n) || n < 1 || n > 10) return invalid(res, "n must be between 1 and 10", "n")
    const size = String(fields.size ?? "auto")
    if (!SIZES.has(size)) return invalid(res, `Invalid size '${size}'`, "size")
    const quality = String(fields.quality ?? "auto")
    if (!QUALITIES.has(quality)) return invalid(res, `Invalid quality '${quality}'`, "quality")
    const format = String(fields.output_format ?? "png")
    if (!FORMATS.has(format)) return invalid(res, `Invalid output_format '${format}'`, "output_format")
    if ("response_format" in fields) {
      return invalid(res, "response_format is not supported for this model.", "response_format")
    }

    if (request.path === "/v1/images/edits") {
      const images = [...(files["image"] ?? []), ...(files["image[]"] ?? [])]
      if (images.length === 0 || images.length > 16) {
        return invalid(res, "between 1 and 16 images are required", "image")
      }
      const mask = files["mask"]?.[0]
      if (mask !== undefined) {
        const [first, header] = [pngHeader(images[0]!), pngHeader(mask)]
        if (header === undefined || (header.colourType !== 6 && header.colourType !== 4)) {
          return invalid(res, "mask must be a PNG with an alpha channel", "mask")
        }
        if (first !== undefined && (first.width !== header.width || first.height !== header.height)) {
          return invalid(res, "mask must have the same dimensions as the image", "mask")
        }
      }
    }

    const bytes = await picture(size === "auto" ? "1024x1024" : size, format)
    const b64 = Buffer.from(bytes).toString("base64")
    const data = Array.from(
      { length: n },
      () => ({ b64_json: fault?.kind === "truncated" ? b64.slice(0, b64.length / 2) : b64 })
    )
    res.writeHead(200, { "content-type": "application/json", "x-request-id": `req_fake_${requests.length}` }).end(
      JSON.stringify({
        created: Math.floor(Date.now() / 1000),
        data,
        background: "opaque",
        output_format: format,
        quality,
        size,
        usage: {
          input_tokens: 50,
          input_tokens_details: { image_tokens: 0, text_tokens: 50 },
          output_tokens: 1056 * n,
          total_tokens: 50 + 1056 * n
        }
      })
    )
  }

  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", async () => {
      const path = new URL(req.url ?? "/", "http://fake").pathname
      // The model list (a channel check), behind the key like every route.
      if (req.method === "GET" && path === "/v1/models") {
        if (req.headers.authorization !== `Bearer ${apiKey}`) {
          return openAiError(res, 401, {
            type: "invalid_request_error",
            code: "invalid_api_key",
            message: "Incorrect API key provided."
          })
        }
        return res.writeHead(200, { "content-type": "application/json" }).end(
          JSON.stringify({ object: "list", data: [{ id: "gpt-image-1", object: "model", owned_by: "openai" }] })
        )
      }
      if (req.method !== "POST" || (path !== "/v1/images/generations" && path !== "/v1/images/edits")) {
        return openAiError(res, 404, {
          type: "invalid_request_error",
          code: "unknown_url",
          message: `Unknown request URL: ${req.method} ${path}`
        })
      }
      try {
        const request = await readRequest(path, req.headers, Buffer.concat(chunks))
        requests.push(request)
        await answer(request, res, req.socket)
      } catch (e) {
        invalid(res, `could not parse the request: ${(e as Error).message}`)
      }
    })
  })
  const listening = await listenOnLoopback(server)
  return {
    url: `http://127.0.0.1:${listening.port}/v1`,
    requests,
    faults,
    close: listening.close
  }
}
