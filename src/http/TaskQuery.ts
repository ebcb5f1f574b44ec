import { Effect } from "effect"
import { DEFAULT_PAGE_LIMIT, ImageTaskListParams, VideoTaskListParams } from "../api/Requests.ts"
import type { TaskKind } from "../domain/Task.ts"
import type { ListFilter } from "../services/TaskStore.ts"
import { readQuery } from "./ListQuery.ts"

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
