/**
 * How a task failed, as its `error` object says it: the spec's code, a
 * message fit for the caller, and whether trying again may help. Each kind
 * names its own codes (VideoKind.ts, ImageKind.ts); the engine writes them.
 */
export interface TaskFailure {
  readonly code: string
  readonly message: string
  readonly retryable: boolean
}
