import { UpstreamState, withUpstream } from "../../src/channel/contract/Adapter.ts"
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

const stateOf = (
  status: string | undefined,
  urls: () => ReturnType<typeof urlsOf>,
  reason: string,
  answer: unknown
) => {
  switch (status) {
    case "submitted":
      return UpstreamState.Pending({ progress: 0, answer })
    // Kling reports no percentage while it works: progress stays where it was.
    case "processing":
      return UpstreamState.Pending({ answer })
    case "succeed":
    case "succeeded":
      return UpstreamState.Succeeded({ results: urls(), answer })
    case "failed":
      return UpstreamState.Failed({
        error: withUpstream(fromTaskFailure(reason), { code: status, message: reason }),
        answer
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
    task
  )

/** A current task (an item of `data` of `GET /tasks?task_ids=`). */
export const currentStateOf = (task: any): UpstreamState =>
  stateOf(str(task?.status), () => urlsOf(task?.outputs), str(task?.message) ?? "", task)

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
