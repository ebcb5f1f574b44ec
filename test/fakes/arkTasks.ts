import ffmpeg from "@ffmpeg-installer/ffmpeg"
import { execFile } from "node:child_process"
import { createHmac, randomBytes } from "node:crypto"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"

/**
 * The fake Ark's tasks (test/fakes/ark.ts): the timeline a test scripts for
 * each, the task object Ark answers at each observation, and the signed result
 * links and real MP4s behind them (docs/adapters/ark.md, States and polling,
 * Results and expiry).
 */

export interface Scenario {
  /** Observations answered `queued`, then `running` (1 each by default; Infinity to wait for a DELETE). */
  readonly queued?: number
  readonly running?: number
  readonly end?: "succeeded" | "failed" | "expired" | "no_video" | "unknown"
  readonly error?: { readonly code: string; readonly message: string }
  /** For `unknown`: the status word answered. */
  readonly status?: string
  /** Lifetime of the signed result link (24 h by default). */
  readonly resultTtlMs?: number
  /**
   * The timeline moves with time, one observation per `stepMs` from the
   * create, whatever is polled (as a real upstream does); needed for callbacks.
   */
  readonly stepMs?: number
  /** `usage.completion_tokens` of the succeeded task (108900 by default, Ark's for 5 s of 720p). */
  readonly tokens?: number
  /** The tokens the account's list (no `filter.task_ids`) shows instead: a record that disagrees with the task's answer. */
  readonly listedTokens?: number
}

export interface FakeTask {
  readonly id: string
  readonly key: string
  readonly body: any
  readonly scenario: Scenario
  readonly createdAt: number
  observed: number
  cancelled: boolean
}

const exec = promisify(execFile)
const scratch = mkdtempSync(join(tmpdir(), "fake-ark-"))
const rendered = new Map<string, Promise<Uint8Array>>()
const SIZES: Record<string, string> = {
  "16:9": "160x90",
  "9:16": "90x160",
  "4:3": "128x96",
  "3:4": "96x128",
  "1:1": "112x112",
  "21:9": "224x96",
  adaptive: "160x90"
}

/** A real H.264 MP4 of the task's duration and ratio, with AAC when audio was asked: the engine inspects results. */
export const mp4 = (duration: number, ratio: string, audio: boolean) => {
  const key = `${duration}-${ratio.replace(":", "x")}-${audio}`
  if (!rendered.has(key)) {
    const file = join(scratch, `${key}.mp4`)
    const sound = audio ? ["-f", "lavfi", "-i", `sine=frequency=440:duration=${duration}`, "-c:a", "aac"] : []
    const args = ["-v", "error", "-f", "lavfi", "-i", `testsrc2=size=${SIZES[ratio]}:rate=12:duration=${duration}`]
    const encode = ["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-shortest", "-y", file]
    rendered.set(key, exec(ffmpeg.path, [...args, ...sound, ...encode]).then(() => new Uint8Array(readFileSync(file))))
  }
  return rendered.get(key)!
}

const SECRET = randomBytes(16)
export const sign = (id: string, expires: number) =>
  createHmac("sha256", SECRET).update(`${id}.${expires}`).digest("hex")

/** The observation the task is at: its polls, or the time since its create for a time-driven timeline. */
export const observation = (task: FakeTask) =>
  task.scenario.stepMs === undefined
    ? task.observed
    : Math.floor((Date.now() - task.createdAt) / task.scenario.stepMs) + 1

/** The status a task shows at its `n`-th observation. */
export const statusAt = (task: FakeTask, n: number) => {
  const { queued = 1, running = 1, end = "succeeded" } = task.scenario
  if (task.cancelled) return "cancelled"
  if (n <= queued) return "queued"
  if (n <= queued + running) return "running"
  if (end === "no_video") return "succeeded"
  return end === "unknown" ? (task.scenario.status ?? "paused") : end
}

/**
 * Ark's task object at this moment; `observe` counts it as one poll of its
 * timeline; `listed`, as the account's list shows it.
 */
export const taskObject = (task: FakeTask, origin: string, observe: boolean, listed = false) => {
  const tokens = listed ? task.scenario.listedTokens ?? task.scenario.tokens ?? 108900 : task.scenario.tokens ?? 108900
  if (observe) task.observed++
  const status = statusAt(task, observation(task))
  const b = task.body
  const done = status === "succeeded" && task.scenario.end !== "no_video"
  const expires = Date.now() + (task.scenario.resultTtlMs ?? 86_400_000)
  const error = status === "failed"
    ? (task.scenario.error ?? { code: "InternalServiceError", message: "internal error" })
    : status === "expired"
    ? { code: "TaskExpired", message: "the task ran past execution_expires_after" }
    : null
  return {
    id: task.id,
    model: b.model,
    status,
    ...(status === "succeeded"
      ? {
        content: done
          ? {
            video_url: `${origin}/tos/${task.id}.mp4?X-Tos-Expires=${expires}&X-Tos-Signature=${sign(task.id, expires)}`
          }
          : {},
        usage: { completion_tokens: tokens, total_tokens: tokens }
      }
      : {}),
    created_at: Math.floor(task.createdAt / 1000),
    updated_at: Math.floor(Date.now() / 1000),
    seed: b.seed ?? 1276,
    resolution: b.resolution ?? "720p",
    ratio: b.ratio ?? "16:9",
    duration: b.duration ?? 5,
    framespersecond: 24,
    service_tier: "default",
    execution_expires_after: b.execution_expires_after ?? 172800,
    generate_audio: b.generate_audio ?? true,
    draft: false,
    priority: 0,
    error
  }
}
