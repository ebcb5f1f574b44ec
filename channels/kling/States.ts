import { type Charge, sumOf, UpstreamState, usageOf, withUpstream } from "../../src/channel/contract/Adapter.ts"
import { fromTaskFailure } from "./Failures.ts"

/**
 * Kling's task objects (docs/adapters/kling.md, States and polling) as
 * normalised states, for both generations: `submitted` and `processing` wait;
 * `succeed` (legacy) or `succeeded` (current) give the video URLs; `failed`
 * ends the task with its refund, its reason read from `task_status_msg` /
 * `message` (the envelope says `SUCCEED` even then). A success without a video
 * is "done but no output": the engine fails it with its refund. Any other word,
 * or none, is Unknown: polled again until the deadline, never failed on sight.
 */

const str = (value: unknown) => (typeof value === "string" && value.length > 0 ? value : undefined)

const urlsOf = (items: unknown) =>
  (Array.isArray(items) ? items : [])
    .filter((v: any) => v?.type === undefined || v.type === "video")
    .map((v: any) => str(v?.url))
    .filter((url): url is string => url !== undefined)
    .map((url) => ({ url, mimeType: "video/mp4" }))

/**
 * What Kling charges for a finished task (docs/adapters/kling.md, Usage and
 * billing): the seconds of the videos it made (each video's `duration`), with
 * what it deducted (`final_unit_deduction` of the legacy API, `billing[]` of
 * the current one) kept beside; billed when it succeeded, or when it deducted
 * units for a failure all the same (Kling deducts none for a failed task).
 */
const chargeOf = (
  succeeded: boolean,
  videos: unknown,
  deducted: number | undefined,
  fields: Readonly<Record<string, unknown>>
): Charge => {
  const durations = (Array.isArray(videos) ? videos : [])
    .filter((v: any) => v?.type === undefined || v.type === "video")
    .map((v: any) => v?.duration)
  return {
    usage: usageOf("second", sumOf(durations), fields),
    billed: succeeded || (deducted !== undefined && deducted > 0)
  }
}

const stateOf = (
  status: string | undefined,
  urls: () => ReturnType<typeof urlsOf>,
  reason: string,
  answer: unknown,
  charge: (succeeded: boolean) => Charge
) => {
  switch (status) {
    case "submitted":
      return UpstreamState.Pending({ progress: 0, answer })
    // Kling reports no percentage while it works: progress stays where it was.
    case "processing":
      return UpstreamState.Pending({ answer })
    case "succeed":
    case "succeeded":
      return UpstreamState.Succeeded({ results: urls(), answer, ...charge(true) })
    case "failed":
      return UpstreamState.Failed({
        error: withUpstream(fromTaskFailure(reason), { code: status, message: reason }),
        answer,
        ...charge(false)
      })
    default:
      return UpstreamState.Unknown({ answer })
  }
}

/** A legacy task (`data` of `GET /v1/videos/{kind}/{id}`). */
export const legacyStateOf = (task: any): UpstreamState =>
  stateOf(
    str(task?.task_status),
    () => urlsOf(task?.task_result?.videos),
    str(task?.task_status_msg) ?? "",
    task,
    (succeeded) => {
      const deducted = sumOf([task?.final_unit_deduction ?? 0])
      const fields = task?.final_unit_deduction === undefined ? {} : { final_unit_deduction: task.final_unit_deduction }
      return chargeOf(succeeded, task?.task_result?.videos, deducted, fields)
    }
  )

/** A current task (an item of `data` of `GET /tasks?task_ids=`). */
export const currentStateOf = (task: any): UpstreamState =>
  stateOf(str(task?.status), () => urlsOf(task?.outputs), str(task?.message) ?? "", task, (succeeded) => {
    const billing = Array.isArray(task?.billing) ? task.billing : []
    const deducted = sumOf([0, ...billing.map((b: any) => b?.amount ?? 0)])
    return chargeOf(succeeded, task?.outputs, deducted, billing.length === 0 ? {} : { billing })
  })

/**
 * The batch answer `{code: 0, data: [task…]}` by task id; ids it leaves out
 * are absent (Unknown to the engine). Undefined when it is not such a list.
 */
export const currentStatesOf = (body: unknown): Map<string, UpstreamState> | undefined => {
  const data = (body as { data?: unknown } | null)?.data
  if (!Array.isArray(data)) return undefined
  const states = new Map<string, UpstreamState>()
  for (const task of data) {
    const id = str(task?.id)
    if (id !== undefined) states.set(id, currentStateOf(task))
  }
  return states
}
