import type { ImageTask, TaskKind, TaskStatus, VideoTask } from "./Task.ts"

/** A row of `tasks` as the API reads it (`TASK_COLUMNS`). */
export interface TaskRow {
  readonly id: string
  readonly kind: TaskKind
  readonly model: string
  readonly operation: string
  readonly status: TaskStatus
  readonly progress: number
  readonly result: any
  readonly error: any
  readonly usage: Record<string, unknown> | null
  readonly client_reference_id: string | null
  readonly metadata: Record<string, unknown> | null
  readonly request_digest: string | null
  readonly created_at: number
  readonly started_at: number | null
  readonly completed_at: number | null
  readonly updated_at: number
}

/**
 * The columns of TaskRow, which the API's reads select instead of `*`: a row
 * also holds the stored request (JSON the driver would parse on every poll)
 * and the engine's columns, which no answer shows.
 */
export const TASK_COLUMNS = [
  "id",
  "kind",
  "model",
  "operation",
  "status",
  "progress",
  "result",
  "error",
  "usage",
  "client_reference_id",
  "metadata",
  "request_digest",
  "created_at",
  "started_at",
  "completed_at",
  "updated_at"
] as const satisfies ReadonlyArray<keyof TaskRow>

/** TASK_COLUMNS as a select list, each column qualified by `table` when given. */
export const taskColumns = (table?: string) =>
  TASK_COLUMNS.map((column) => table === undefined ? column : `${table}.${column}`).join(", ")

const optional = <K extends string, V>(key: K, value: V | null) =>
  (value === null ? {} : { [key]: value }) as { [P in K]?: V }

/**
 * Image items stored before they carried `url_auth` get it from their URL:
 * only a `resource_api_key` result is served at its asset's stable
 * `/v1/assets/{id}/content` path; every other URL is signed.
 */
const withUrlAuth = (result: any) => {
  const images = result?.images
  if (!Array.isArray(images) || images.every((item: any) => item?.url_auth !== undefined)) return result
  return {
    ...result,
    images: images.map((item: any) =>
      item?.url_auth !== undefined ? item : {
        ...item,
        url_auth: String(item?.url).endsWith(`/v1/assets/${item?.asset_id}/content`) ? "resource_api_key" : "none"
      }
    )
  }
}

/** The task object exactly as the query endpoints return it. */
export const toTaskObject = (row: TaskRow): VideoTask | ImageTask => {
  const common = {
    id: row.id,
    model: row.model,
    status: row.status,
    progress: row.progress,
    error: row.error ?? null,
    ...optional("client_reference_id", row.client_reference_id),
    // Always an object, `{}` when none was sent (docs/api.md, Lists).
    metadata: row.metadata ?? {},
    created_at: row.created_at,
    started_at: row.started_at,
    completed_at: row.completed_at,
    updated_at: row.updated_at
  }
  return row.kind === "video"
    ? { ...common, object: "video.task", operation: "generation", result: row.result ?? null }
    : {
      ...common,
      object: "image.task",
      operation: row.operation as ImageTask["operation"],
      result: withUrlAuth(row.result ?? null),
      usage: row.usage ?? {}
    }
}
