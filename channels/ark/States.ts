import {
  type Charge,
  type ListedTask,
  UpstreamState,
  usageOf,
  withUpstream
} from "../../src/channel/contract/Adapter.ts"
import { fromTaskFailure } from "./Failures.ts"

/**
 * Ark's task object as a normalised state. Every status Ark documents is
 * mapped: `queued` and `running` wait; `succeeded` gives its video URL;
 * `failed`, `expired` and `cancelled` end the task with its refund. Any other
 * word, or none, is Unknown: polled again until the deadline, never failed on
 * sight (a newer Ark, or a relay in front of Ark answering `unknown` for a task
 * it has just created; docs/adapters/ark.md, States and polling).
 */

interface ArkTask {
  readonly id?: unknown
  readonly model?: unknown
  readonly status?: unknown
  readonly created_at?: unknown
  readonly content?: { readonly video_url?: unknown } | null
  readonly usage?: Readonly<Record<string, unknown>> | null
  readonly error?: { readonly code?: unknown; readonly message?: unknown } | null
}

const str = (value: unknown) => (typeof value === "string" && value.length > 0 ? value : undefined)

/**
 * What Ark charges for a finished task (docs/adapters/ark.md, Usage and
 * billing): it bills the tokens of the video it generated, `usage.completion_tokens`
 * of a succeeded task; a task that failed, expired or was cancelled generated
 * none and is not billed (unless its answer counts tokens all the same).
 */
export const chargeOf = (task: ArkTask): Charge => {
  const usage = usageOf("token", task.usage?.completion_tokens, task.usage ?? undefined)
  const status = str(task.status)
  if (status === "succeeded") return { usage, billed: true }
  if (status === "failed" || status === "expired" || status === "cancelled") {
    return { usage, billed: usage !== undefined && usage.quantity > 0 }
  }
  return {}
}

export const stateOf = (task: ArkTask): UpstreamState => {
  const status = str(task.status)
  switch (status) {
    case "queued":
      return UpstreamState.Pending({ progress: 0, answer: task })
    // Ark reports no percentage while it runs; the task's progress stays where it was.
    case "running":
      return UpstreamState.Pending({ answer: task })
    case "succeeded": {
      // A success without a video is "done but no output": the engine fails it with its refund.
      const url = str(task.content?.video_url)
      return UpstreamState.Succeeded({
        results: url === undefined ? [] : [{ url, mimeType: "video/mp4" }],
        answer: task,
        ...chargeOf(task)
      })
    }
    case "failed":
    case "expired":
    case "cancelled":
      return UpstreamState.Failed({
        error: withUpstream(fromTaskFailure(status, str(task.error?.code) ?? ""), {
          code: str(task.error?.code) ?? status,
          message: str(task.error?.message)
        }),
        answer: task,
        ...chargeOf(task)
      })
    default:
      return UpstreamState.Unknown({ answer: task })
  }
}

/**
 * The list answer `{ total, items }` by task id; ids it leaves out are
 * absent, so the engine treats them as Unknown. Undefined when the answer is
 * not a list at all (a proxy's page served with 200).
 */
export const statesOf = (body: unknown): Map<string, UpstreamState> | undefined => {
  const states = new Map<string, UpstreamState>()
  const items = (body as { items?: unknown } | null)?.items
  if (!Array.isArray(items)) return undefined
  for (const task of items as ReadonlyArray<ArkTask>) {
    const id = str(task?.id)
    if (id !== undefined) states.set(id, stateOf(task))
  }
  return states
}

/** Ark's own status word for one task of a list answer; undefined when the answer does not name the task. */
export const statusIn = (body: unknown, id: string): string | undefined => {
  const items = (body as { items?: unknown } | null)?.items
  if (!Array.isArray(items)) return undefined
  const task = (items as ReadonlyArray<ArkTask>).find((t) => str(t?.id) === id)
  return task === undefined ? undefined : str(task.status)
}

/**
 * The tasks of one page of the account's list as the provider's record of
 * them (reconciliation), and whether the list has more pages; undefined when
 * the answer is not a list.
 */
export const listedOf = (body: unknown): { tasks: ReadonlyArray<ListedTask>; total: number } | undefined => {
  const items = (body as { items?: unknown } | null)?.items
  if (!Array.isArray(items)) return undefined
  const tasks = (items as ReadonlyArray<ArkTask>).flatMap((task): ReadonlyArray<ListedTask> => {
    const id = str(task?.id)
    const created = typeof task?.created_at === "number" ? task.created_at * 1000 : undefined
    if (id === undefined || created === undefined) return []
    return [{ upstreamId: id, createdAt: created, model: str(task.model), status: str(task.status), ...chargeOf(task) }]
  })
  const total = (body as { total?: unknown }).total
  return { tasks, total: typeof total === "number" ? total : tasks.length }
}
