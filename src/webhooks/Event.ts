/** The `api_version` every event carries (spec: Versioning). */
export const API_VERSION = "2026-07-17"

/** A task's terminal event: `video.task.succeeded`, `image.task.failed`, ... (the task kinds name theirs). */
export type TaskEventType = `${string}.task.${"succeeded" | "failed"}`

/** The task kinds' events, the account's low-balance alert and the operator's test event. */
export type EventType = TaskEventType | "account.balance_low" | "webhook.test"

/** The event object of the spec; `id` stays the same on every delivery attempt. */
export interface EventObject {
  readonly id: string
  readonly object: "event"
  readonly api_version: typeof API_VERSION
  readonly type: EventType
  readonly created_at: number
  readonly data: { readonly object: unknown }
}

export const makeEvent = (id: string, type: EventType, createdAt: number, object: unknown): EventObject => ({
  id,
  object: "event",
  api_version: API_VERSION,
  type,
  created_at: createdAt,
  data: { object }
})
