import { Effect } from "effect"
import { readQuery } from "../platform/http/ListQuery.ts"
import { DEFAULT_PAGE_LIMIT, ImageTaskListParams, VideoTaskListParams } from "./Requests.ts"
import type { TaskKind } from "./Task.ts"
import type { ListFilter } from "./TaskStore.ts"

/** The list query parameters of the spec, with the schema the typed client sends them by. */
export const readListFilter = (kind: TaskKind) =>
  Effect.map(kind === "video" ? readQuery(VideoTaskListParams) : readQuery(ImageTaskListParams), (p) => ({
    status: p.status,
    operation: p.operation,
    clientReferenceId: p.client_reference_id,
    createdAfter: p.created_after,
    createdBefore: p.created_before,
    after: p.after,
    limit: p.limit ?? DEFAULT_PAGE_LIMIT
  } satisfies ListFilter))
