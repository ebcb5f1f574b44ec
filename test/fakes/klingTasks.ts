import { createHmac, randomBytes } from "node:crypto"
import { mp4 } from "./arkTasks.ts"

/**
 * The fake Kling's tasks (test/fakes/kling.ts): the timeline a test scripts for
 * each, the task object each API generation answers (legacy `succeed` +
 * `task_result.videos`, current `succeeded` + `outputs`), and the links and
 * real MP4s behind the results (docs/adapters/kling.md, States and polling,
 * Results and expiry).
 */

export { mp4 }

export interface Scenario {
  /** Observations answered `submitted`, then `processing` (1 each by default). */
  readonly submitted?: number
  readonly processing?: number
  readonly end?: "succeed" | "failed" | "no_video" | "unknown"
  /** For `failed`: the reason (legacy `task_status_msg`, current `message`). */
  readonly message?: string
  /** For `unknown`: the status word answered. */
  readonly status?: string
  /** Lifetime of the result link (30 days by default). */
  readonly resultTtlMs?: number
  /** The timeline moves with time, one observation per `stepMs` from the create, whatever is polled. */
  readonly stepMs?: number
}

export interface FakeTask {
  readonly id: string
  readonly api: "legacy" | "current"
  /** Legacy: text2video, image2video or omni-video; current: the endpoint. */
  readonly kind: string
  readonly model: string
  readonly externalId: string | undefined
  readonly body: any
  readonly scenario: Scenario
  readonly createdAt: number
  observed: number
}

const SECRET = randomBytes(16)
export const sign = (id: string, expires: number) =>
  createHmac("sha256", SECRET).update(`${id}.${expires}`).digest("hex")

export const newTaskId = () =>
  `8${String(Date.now()).slice(-9)}${String(Math.floor(Math.random() * 1e8)).padStart(8, "0")}`

/** The observation the task is at: its polls, or the time since its create for a time-driven timeline. */
export const observation = (task: FakeTask) =>
  task.scenario.stepMs === undefined
    ? task.observed
    : Math.floor((Date.now() - task.createdAt) / task.scenario.stepMs) + 1

/** The word of the generation's vocabulary at the task's `n`-th observation (`succeed` is legacy-only). */
export const statusAt = (task: FakeTask, n: number) => {
  const { submitted = 1, processing = 1, end = "succeed" } = task.scenario
  if (n <= submitted) return "submitted"
  if (n <= submitted + processing) return "processing"
  if (end === "failed") return "failed"
  if (end === "unknown") return task.scenario.status ?? "paused"
  return task.api === "legacy" ? "succeed" : "succeeded"
}

export const isTerminal = (task: FakeTask) =>
  ["failed", "succeed", "succeeded"].includes(statusAt(task, observation(task)))

/** Duration, ratio and audio of the task's video, from either body shape. */
export const videoOf = (task: FakeTask) => {
  const b = task.body
  if (task.api === "legacy") {
    return { duration: Number(b.duration ?? 5), ratio: b.aspect_ratio ?? "16:9", audio: b.sound === "on" }
  }
  const s = b.settings ?? {}
  return { duration: s.duration ?? 5, ratio: s.aspect_ratio ?? "16:9", audio: s.audio !== "off" }
}

export const resultBytes = (task: FakeTask) => {
  const { audio, duration, ratio } = videoOf(task)
  return mp4(duration, ratio, audio)
}

/** The task object at this moment; `observe` counts it as one poll of its timeline. */
export const taskObject = (task: FakeTask, origin: string, observe: boolean) => {
  if (observe) task.observed++
  const status = statusAt(task, observation(task))
  const done = (status === "succeed" || status === "succeeded") && task.scenario.end !== "no_video"
  const expires = Date.now() + (task.scenario.resultTtlMs ?? 30 * 86_400_000)
  const url = `${origin}/cdn/${task.id}.mp4?expires=${expires}&sig=${sign(task.id, expires)}`
  const message = status === "failed" ? (task.scenario.message ?? "Internal error") : ""
  const duration = String(videoOf(task).duration)
  if (task.api === "legacy") {
    return {
      task_id: task.id,
      task_status: status,
      task_status_msg: message,
      task_info: task.externalId === undefined ? {} : { external_task_id: task.externalId },
      created_at: task.createdAt,
      updated_at: Date.now(),
      ...(status === "succeed" ? { final_unit_deduction: "5" } : {}),
      task_result: { videos: done ? [{ id: `v${task.id}`, url, duration }] : [] }
    }
  }
  return {
    id: task.id,
    status,
    message,
    create_time: task.createdAt,
    update_time: Date.now(),
    ...(task.externalId === undefined ? {} : { external_id: task.externalId }),
    outputs: done ? [{ type: "video", id: `v${task.id}`, url, watermark_url: `${url}&wm=1`, duration }] : [],
    billing: status === "succeeded" ? [{ type: "unit", amount: 5 }] : []
  }
}
