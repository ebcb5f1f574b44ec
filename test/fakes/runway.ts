import ffmpeg from "@ffmpeg-installer/ffmpeg"
import { execFile } from "node:child_process"
import { randomUUID } from "node:crypto"
import { mkdtempSync, readFileSync } from "node:fs"
import { createServer, type IncomingHttpHeaders, type ServerResponse } from "node:http"
import type { Socket } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { listenOnLoopback } from "../support/fakeServer.ts"

/**
 * A fake of Runway's developer API on loopback (docs/adapters/runway.md,
 * Tests), as strict as the real one on what the adapter sends:
 *
 * - every request needs `Authorization: Bearer <key>` (401 otherwise) and
 *   `X-Runway-Version: 2024-11-06` (400 otherwise); creates need a JSON body;
 * - `POST /v1/text_to_video` and `POST /v1/image_to_video` check each model's
 *   fields as `@runwayml/sdk` 4.20.1 types them (required fields, enums of
 *   `ratio` and `duration`, `promptImage` as an HTTPS URL or a data URI, or an
 *   array of `{ uri, position }`, no unknown field) and answer `{ id,
 *   estimatedCost }`;
 * - `GET /v1/tasks/{id}` answers the SDK's task shapes, each poll the next
 *   status of the task's `Life`; `DELETE /v1/tasks/{id}` (204) cancels a task
 *   still pending, throttled or running and deletes an ended one (404 after);
 * - `GET /v1/organization` the credit balance and tier;
 * - a succeeded task's `output` URL serves a real MP4 of the ratio's size and
 *   the duration, silent where the model makes no sound, with no key.
 *
 * Errors are Runway's envelope `{ "error": "…" }`. Each route takes faults a
 * test queued: 429 (with or without `Retry-After`), a status with a body, a
 * 5xx HTML page, a connection reset, a hang, and for creates a task made
 * whose answer never comes.
 */

export const RUNWAY_VERSION = "2024-11-06"

export type Fault =
  | { readonly kind: "status"; readonly status: number; readonly body?: unknown }
  | { readonly kind: "rate_limited"; readonly retryAfter?: string }
  | { readonly kind: "html"; readonly status: number }
  | { readonly kind: "hang" }
  /** Create only: the task is made (and will run), but the answer never comes. */
  | { readonly kind: "lost" }
  | { readonly kind: "reset" }

export type Status = "PENDING" | "THROTTLED" | "RUNNING" | "SUCCEEDED" | "FAILED" | "CANCELLED"

export interface Life {
  /** Only for the task made with this `promptText`; any when absent. */
  readonly prompt?: string
  /** The status each read answers, in order, the last one repeated. */
  readonly statuses: ReadonlyArray<Status>
  readonly failure?: string
  readonly failureCode?: string
}

export interface RunwayRequest {
  readonly at: number
  readonly method: string
  readonly path: string
  readonly headers: IncomingHttpHeaders
  readonly body: any
}

export interface RunwayTask {
  readonly id: string
  readonly endpoint: "text_to_video" | "image_to_video"
  readonly body: any
  readonly life: Life
  readonly createdAt: string
  reads: number
  said: Status | undefined
  cancelled: boolean
  deleted: boolean
}

export interface FakeRunway {
  /** The API's origin, as a channel's `base_url` and the SDK's `baseURL` take it. */
  readonly url: string
  readonly requests: Array<RunwayRequest>
  readonly faults: {
    readonly create: Array<Fault>
    readonly task: Array<Fault>
    readonly delete: Array<Fault>
    readonly organization: Array<Fault>
    readonly output: Array<Fault>
  }
  readonly lives: Array<Life>
  /** Every task made, deleted ones too. */
  readonly tasks: Map<string, RunwayTask>
  readonly close: () => Promise<void>
}

const DEFAULT_LIFE: Life = { statuses: ["PENDING", "RUNNING", "SUCCEEDED"] }
const GEN4_RATIOS = ["1280:720", "720:1280", "1104:832", "832:1104", "960:960", "1584:672"]
const VEO_RATIOS = ["1280:720", "720:1280", "1080:1920", "1920:1080"]
const OUTPUT_FORMATS = ["mp4", "prores", "png_sequence"]

type Check = (value: unknown) => string | undefined

interface Spec {
  readonly required: Record<string, Check>
  readonly optional: Record<string, Check>
  readonly positions?: ReadonlyArray<"first" | "last">
  /** Whether the model makes sound (as `audio` asks, true when absent). */
  readonly sound: boolean
}

const oneOf = (values: ReadonlyArray<unknown>): Check => (v) =>
  values.includes(v) ? undefined : `must be one of ${values.map((x) => JSON.stringify(x)).join(", ")}`
const integer = (min: number, max: number): Check => (v) =>
  typeof v === "number" && Number.isInteger(v) && v >= min && v <= max
    ? undefined
    : `must be an integer from ${min} to ${max}`
const promptText: Check = (v) =>
  typeof v === "string" && v.length > 0 && v.length <= 1000
    ? undefined
    : "must be a non-empty string of at most 1000 characters"
const boolean: Check = (v) => (typeof v === "boolean" ? undefined : "must be a boolean")
const string: Check = (v) => (typeof v === "string" ? undefined : "must be a string")
const seed: Check = integer(0, 4_294_967_295)
const moderation: Check = (v) =>
  typeof v === "object" && v !== null &&
    Object.entries(v).every(([k, x]) => k === "publicFigureThreshold" && ["auto", "low"].includes(x as string))
    ? undefined
    : "must be { publicFigureThreshold: auto | low }"
const isUri = (v: unknown) =>
  typeof v === "string" &&
  (/^https:\/\/\S+$/.test(v) || /^data:image\/(png|jpeg|webp);base64,[A-Za-z0-9+/]+=*$/.test(v))
const promptImage = (positions: ReadonlyArray<string>): Check => (v) => {
  if (typeof v === "string") return isUri(v) ? undefined : "must be an HTTPS URL, a Runway upload URI or a data URI"
  if (!Array.isArray(v) || v.length === 0) return "must be a URI or a non-empty array"
  for (const item of v) {
    if (typeof item !== "object" || item === null || Object.keys(item).some((k) => k !== "uri" && k !== "position")) {
      return "items must be { uri, position }"
    }
    if (!isUri(item.uri)) return "uri must be an HTTPS URL, a Runway upload URI or a data URI"
    if (!positions.includes(item.position)) return `position must be one of ${positions.join(", ")}`
  }
  const at = v.map((i: { position: string }) => i.position)
  if (new Set(at).size !== at.length) return "each position at most once"
  if (!at.includes("first")) return "this model does not support generating with only a last frame"
  return undefined
}

const gen45Common = { contentModeration: moderation, outputFormat: oneOf(OUTPUT_FORMATS), seed }
const veoOptional = { audio: boolean, duration: oneOf([4, 6, 8]), negativePrompt: string, seed }

/** Each model's create fields on each endpoint, as the SDK's `*CreateParams` types have them. */
const SPECS: Record<"text_to_video" | "image_to_video", Record<string, Spec>> = {
  text_to_video: {
    "gen4.5": {
      required: { duration: integer(2, 10), promptText, ratio: oneOf(["1280:720", "720:1280"]) },
      optional: gen45Common,
      sound: false
    },
    "veo3.1": { required: { promptText, ratio: oneOf(VEO_RATIOS) }, optional: veoOptional, sound: true },
    "veo3.1_fast": { required: { promptText, ratio: oneOf(VEO_RATIOS) }, optional: veoOptional, sound: true }
  },
  image_to_video: {
    "gen4.5": {
      required: {
        duration: integer(2, 10),
        promptImage: promptImage(["first"]),
        promptText,
        ratio: oneOf(GEN4_RATIOS)
      },
      optional: gen45Common,
      sound: false
    },
    gen4_turbo: {
      required: { promptImage: promptImage(["first"]), ratio: oneOf(GEN4_RATIOS) },
      optional: { contentModeration: moderation, duration: oneOf([5, 10]), promptText, seed },
      sound: false
    },
    "veo3.1": {
      required: { promptImage: promptImage(["first", "last"]), ratio: oneOf(VEO_RATIOS) },
      optional: { ...veoOptional, promptText },
      sound: true
    },
    "veo3.1_fast": {
      required: { promptImage: promptImage(["first", "last"]), ratio: oneOf(VEO_RATIOS) },
      optional: { ...veoOptional, promptText },
      sound: true
    }
  }
}

/** Why Runway would refuse this create (its 400), or undefined. */
const refusal = (endpoint: "text_to_video" | "image_to_video", body: any): string | undefined => {
  if (typeof body !== "object" || body === null || Array.isArray(body)) return "Expected a JSON object body."
  const spec = SPECS[endpoint][body.model]
  if (spec === undefined) return `Invalid model for ${endpoint}: ${JSON.stringify(body.model)}.`
  for (const [field, check] of Object.entries(spec.required)) {
    if (body[field] === undefined) return `${field} is required.`
    const problem = check(body[field])
    if (problem) return `${field} ${problem}.`
  }
  for (const [field, value] of Object.entries(body)) {
    if (field === "model" || field in spec.required) continue
    const check = spec.optional[field]
    if (check === undefined) return `Unrecognized key: ${field}.`
    const problem = check(value)
    if (problem) return `${field} ${problem}.`
  }
  return undefined
}

const exec = promisify(execFile)
const scratch = mkdtempSync(join(tmpdir(), "fake-runway-"))
const rendered = new Map<string, Promise<Uint8Array>>()
/**
 * An H.264 MP4 of the ratio's size and the duration, with an AAC soundtrack
 * or without an audio track (as Runway's Gen-4 models make), rendered once
 * per shape at a low frame rate so a 1080p video costs little to make.
 */
const movie = (size: string, seconds: string, sound: boolean) => {
  const name = `${size}-${seconds}-${sound ? "sound" : "silent"}.mp4`
  if (!rendered.has(name)) {
    const file = join(scratch, name)
    rendered.set(
      name,
      exec(ffmpeg.path, [
        ...["-v", "error", "-f", "lavfi", "-i", `testsrc2=size=${size}:rate=2:duration=${seconds}`],
        ...(sound ? ["-f", "lavfi", "-i", `sine=frequency=440:duration=${seconds}`, "-c:a", "aac"] : []),
        ...["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-shortest"],
        ...["-movflags", "+faststart", "-y", file]
      ]).then(() => new Uint8Array(readFileSync(file)))
    )
  }
  return rendered.get(name)!
}

const json = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) =>
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify(body))
const runwayError = (res: ServerResponse, status: number, error: string) => json(res, status, { error })

const ENDED: ReadonlyArray<Status> = ["SUCCEEDED", "FAILED", "CANCELLED"]
const creditsOf = (task: RunwayTask) => (typeof task.body.duration === "number" ? task.body.duration : 8) * 10

export const startFakeRunway = async (apiKey: string): Promise<FakeRunway> => {
  let base = ""
  const fake: Omit<FakeRunway, "url" | "close"> = {
    requests: [],
    faults: { create: [], task: [], delete: [], organization: [], output: [] },
    lives: [],
    tasks: new Map()
  }
  const takeLife = (prompt: unknown) => {
    const at = fake.lives.findIndex((life) => life.prompt === undefined || life.prompt === prompt)
    return at < 0 ? DEFAULT_LIFE : fake.lives.splice(at, 1)[0]!
  }

  /** The task as `GET /v1/tasks/{id}` shapes it for its status. */
  const taskObject = (task: RunwayTask, status: Status) => {
    const common = { id: task.id, createdAt: task.createdAt, status }
    switch (status) {
      case "PENDING":
      case "THROTTLED":
        return { ...common, estimatedCost: { credits: creditsOf(task) } }
      case "RUNNING":
        return { ...common, estimatedCost: { credits: creditsOf(task) }, progress: 0.5 }
      case "SUCCEEDED":
        return { ...common, cost: { credits: creditsOf(task) }, output: [`${base}/outputs/${task.id}.mp4`] }
      case "FAILED":
        return {
          ...common,
          cost: { credits: 0 },
          failure: task.life.failure ?? "An unexpected error occurred.",
          ...(task.life.failureCode ? { failureCode: task.life.failureCode } : {})
        }
      case "CANCELLED":
        return { ...common, cost: { credits: 0 } }
    }
  }

  const answer = async (request: RunwayRequest, res: ServerResponse, socket: Socket) => {
    const output = /^\/outputs\/([^/]+)\.mp4$/.exec(request.path)
    const route = output
      ? "output"
      : request.path === "/v1/organization"
      ? "organization"
      : /^\/v1\/tasks\/[^/]+$/.test(request.path)
      ? (request.method === "DELETE" ? "delete" : "task")
      : request.path === "/v1/text_to_video" || request.path === "/v1/image_to_video"
      ? "create"
      : undefined
    if (route === undefined) return runwayError(res, 404, "Not found.")
    // Output links are signed URLs of their own: no key, no version.
    if (route !== "output") {
      if (request.headers.authorization !== `Bearer ${apiKey}`) {
        return runwayError(res, 401, "The API key you provided is incorrect.")
      }
      if (request.headers["x-runway-version"] !== RUNWAY_VERSION) {
        return runwayError(res, 400, "The X-Runway-Version header must be set to a valid version.")
      }
    }
    const allowed = {
      output: ["GET"],
      organization: ["GET"],
      task: ["GET", "DELETE"],
      delete: ["DELETE"],
      create: ["POST"]
    }
    if (!allowed[route].includes(request.method)) return runwayError(res, 405, "Method not allowed.")
    const fault = fake.faults[route].shift()
    if (fault?.kind === "hang") return
    if (fault?.kind === "reset") return socket.destroy()
    if (fault?.kind === "status") return json(res, fault.status, fault.body ?? {})
    if (fault?.kind === "html") {
      return res.writeHead(fault.status, { "content-type": "text/html" })
        .end("<html><body><h1>502 Bad Gateway</h1><p>edge-runway-7 at 10.0.0.7</p></body></html>")
    }
    if (fault?.kind === "rate_limited") {
      return json(
        res,
        429,
        { error: "You have exceeded the rate limit." },
        fault.retryAfter === undefined ? {} : { "retry-after": fault.retryAfter }
      )
    }

    if (route === "organization") {
      return json(res, 200, {
        creditBalance: 1000,
        tier: {
          maxMonthlyCreditSpend: 100000,
          models: { gen4_turbo: { maxConcurrentGenerations: 2, maxDailyGenerations: 50 } }
        },
        usage: { models: {} }
      })
    }
    if (route === "create") {
      if (!String(request.headers["content-type"] ?? "").startsWith("application/json")) {
        return runwayError(res, 400, "Expected a JSON body.")
      }
      const endpoint = request.path === "/v1/text_to_video" ? "text_to_video" : "image_to_video"
      const refused = refusal(endpoint, request.body)
      if (refused !== undefined) return runwayError(res, 400, refused)
      const task: RunwayTask = {
        id: randomUUID(),
        endpoint,
        body: request.body,
        life: takeLife(request.body.promptText),
        createdAt: new Date().toISOString(),
        reads: 0,
        said: undefined,
        cancelled: false,
        deleted: false
      }
      fake.tasks.set(task.id, task)
      if (fault?.kind === "lost") return
      return json(res, 200, { id: task.id, estimatedCost: { credits: creditsOf(task) } })
    }
    if (route === "output") {
      const task = fake.tasks.get(output![1]!)
      if (task === undefined || task.deleted || task.said !== "SUCCEEDED") {
        return res.writeHead(403, { "content-type": "application/xml" }).end("<Error>AccessDenied</Error>")
      }
      const size = String(task.body.ratio).replace(":", "x")
      const seconds = String(task.body.duration ?? 8)
      const sound = SPECS[task.endpoint][task.body.model]!.sound && task.body.audio !== false
      const bytes = await movie(size, seconds, sound)
      return res.writeHead(200, { "content-type": "video/mp4", "content-length": String(bytes.byteLength) }).end(bytes)
    }
    const id = decodeURIComponent(request.path.slice("/v1/tasks/".length))
    const task = fake.tasks.get(id)
    if (task === undefined || task.deleted) return runwayError(res, 404, "Task not found.")
    if (route === "delete") {
      // Pending, throttled or running: cancelled; ended: deleted with its outputs.
      if (task.said !== undefined && ENDED.includes(task.said)) task.deleted = true
      else task.cancelled = true
      return res.writeHead(204).end()
    }
    const status = task.cancelled
      ? "CANCELLED"
      : task.life.statuses[Math.min(task.reads++, task.life.statuses.length - 1)]!
    task.said = status
    return json(res, 200, taskObject(task, status))
  }

  const server = createServer((req, res) => {
    const chunks: Array<Buffer> = []
    req.on("data", (c: Buffer) => chunks.push(c))
    req.on("end", async () => {
      const text = Buffer.concat(chunks).toString("utf8")
      let body: unknown = undefined
      try {
        body = text === "" ? undefined : JSON.parse(text)
      } catch {
        return runwayError(res, 400, "Malformed JSON.")
      }
      const request: RunwayRequest = {
        at: Date.now(),
        method: req.method ?? "GET",
        path: new URL(req.url ?? "/", "http://fake").pathname,
        headers: req.headers,
        body
      }
      fake.requests.push(request)
      try {
        await answer(request, res, req.socket)
      } catch (e) {
        runwayError(res, 500, `fake failure: ${(e as Error).message}`)
      }
    })
  })
  const listening = await listenOnLoopback(server)
  base = `http://127.0.0.1:${listening.port}`
  return { ...fake, url: base, close: listening.close }
}
