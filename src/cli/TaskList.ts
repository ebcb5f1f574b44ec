import { Effect } from "effect"
import { type AnyTask, listImageTasks, listVideoTasks, type VideoListParams } from "../client/Tasks.ts"
import type { TaskKind } from "../tasks/Task.ts"
import { UsageError } from "./Common.ts"

/**
 * `mtg tasks list` without `--kind`: the video and the image tasks in one
 * list, newest first. The API lists each kind on its own, each with its own
 * `after` cursor (a task id of that kind), so a page of both is merged here:
 *
 * - Each list is read from its cursor, `limit` tasks of each; the two are
 *   merged by `created_at`, newest first (a video task before an image task
 *   of the same second), and the first `limit` are the page. A list whose
 *   tasks were all taken ends the page, so no task of the other list can
 *   have been passed over.
 * - The page's cursor names the last task shown of each kind,
 *   `VIDEO_ID,IMAGE_ID`; a part is empty while no task of its kind has been
 *   shown (that list then starts at its newest on the next page). Each list
 *   goes on from its own part, so the next page continues the same merged
 *   order: no task is shown twice or skipped, whatever their timestamps.
 *   Tasks created meanwhile appear at the top of a fresh first page, as with
 *   the API's own lists.
 */

/** The last task shown of each kind; `undefined`: none yet. */
export interface MergedCursor {
  readonly video: string | undefined
  readonly image: string | undefined
}

export const formatCursor = (cursor: MergedCursor) => `${cursor.video ?? ""},${cursor.image ?? ""}`

export const parseCursor = (value: string): MergedCursor | undefined => {
  const parts = value.split(",")
  if (parts.length !== 2) return undefined
  const [video, image] = parts.map((p) => p.trim())
  return { video: video || undefined, image: image || undefined }
}

export const kindOfTask = (task: AnyTask): TaskKind => (task.object === "video.task" ? "video" : "image")

interface Page {
  readonly data: ReadonlyArray<AnyTask>
  readonly has_more: boolean
}

/** A page of both kinds, as `tasks list --json` prints it: the API's list envelope and the cursor of the next page. */
export interface MergedPage {
  readonly object: "list"
  readonly data: ReadonlyArray<AnyTask>
  readonly has_more: boolean
  readonly first_id: string | null
  readonly last_id: string | null
  /** `--after` for the next page (`VIDEO_ID,IMAGE_ID`); null on the last page. */
  readonly next_after: string | null
}

/** The first `limit` tasks of the two pages in one order, and where each list stands after them. */
export const mergePages = (video: Page, image: Page, limit: number, from: MergedCursor): MergedPage => {
  const data: Array<AnyTask> = []
  let v = 0
  let i = 0
  while (data.length < limit && (v < video.data.length || i < image.data.length)) {
    const a = video.data[v]
    const b = image.data[i]
    if (b === undefined || (a !== undefined && a.created_at >= b.created_at)) {
      data.push(a!)
      v++
    } else {
      data.push(b)
      i++
    }
  }
  const hasMore = v < video.data.length || i < image.data.length || video.has_more || image.has_more
  const cursor: MergedCursor = {
    video: v > 0 ? video.data[v - 1]!.id : from.video,
    image: i > 0 ? image.data[i - 1]!.id : from.image
  }
  return {
    object: "list",
    data,
    has_more: hasMore,
    first_id: data[0]?.id ?? null,
    last_id: data.at(-1)?.id ?? null,
    next_after: hasMore ? formatCursor(cursor) : null
  }
}

/** The gateway's page size when none is asked for. */
export const DEFAULT_LIMIT = 20

type Filter = Omit<VideoListParams, "after" | "limit">

/** One page of both kinds from `after` (a cursor `mergePages` made, or none for the newest). */
export const listBothKinds = (filter: Filter, after: string | undefined, limit = DEFAULT_LIMIT) =>
  Effect.gen(function*() {
    const from = after === undefined ? { video: undefined, image: undefined } : parseCursor(after)
    if (from === undefined) {
      return yield* new UsageError({
        message: `Without --kind, --after takes the cursor a page printed (VIDEO_ID,IMAGE_ID), not ${
          JSON.stringify(after)
        }; to go on after one task, give its --kind.`
      })
    }
    const [video, image] = yield* Effect.all([
      listVideoTasks({ ...filter, limit, ...(from.video === undefined ? {} : { after: from.video }) }),
      listImageTasks({ ...filter, limit, ...(from.image === undefined ? {} : { after: from.image }) })
    ], { concurrency: 2 })
    return mergePages(video, image, limit, from)
  })
