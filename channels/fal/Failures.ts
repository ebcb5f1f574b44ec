import type { HttpClientError } from "@effect/platform"
import {
  certainlyNotSent,
  FailureCodes,
  GenerationError,
  retryHintMs,
  type TaskKind,
  type UpstreamAnswerDetail
} from "../../src/channel/contract/Adapter.ts"

/**
 * What fal's answers mean for a task (docs/adapters/fal.md, Failures), in
 * the spec's words for the task's kind: fal's own detail goes to the log
 * and `task_attempts` (`upstream`), never to the caller. fal validates the
 * input when the request runs, not at submit, so a refused input shows at
 * the result fetch (422): it fails the task, not retryable, and is never
 * tried again or elsewhere.
 */

type Headers = Readonly<Record<string, string | undefined>>

const words = {
  video: {
    failed: FailureCodes.videoFailed,
    unavailable: FailureCodes.videoFailed,
    busy: "The video service is busy. Create a new task to try again.",
    unconfirmed: "The video service did not confirm the task. Create a new task to try again.",
    down: "The video service is temporarily unavailable. Create a new task to try again.",
    unsafe: "The request or its result was refused by the content safety policy.",
    invalid: "The video service refused the parameters or reference media of this request.",
    failedRun: "The video could not be generated.",
    download: "The video could not be downloaded.",
    expired: "The generated video expired before it could be stored.",
    poll: "Polling the video service failed."
  },
  image: {
    failed: FailureCodes.imageFailed,
    unavailable: FailureCodes.imageUnavailable,
    busy: "The image service is temporarily unavailable. Create a new task to try again.",
    unconfirmed: "The image service did not confirm the task. Create a new task to try again.",
    down: "The image service is temporarily unavailable. Create a new task to try again.",
    unsafe: "The image service's content policy refused this prompt or its result.",
    invalid: "The image service refused this request.",
    failedRun: "The image could not be generated.",
    download: "The image could not be downloaded.",
    expired: "The generated image expired before it could be stored.",
    poll: "Polling the image service failed."
  }
} as const

/** fal's own words in an error answer: `detail` (a string, or FastAPI's list of `{loc, msg, type}`). */
const detailOf = (body: unknown): { readonly message?: string; readonly type?: string } => {
  const detail = (body as { detail?: unknown } | null)?.detail
  if (typeof detail === "string") return { message: detail }
  if (Array.isArray(detail) && detail.length > 0) {
    const first = detail[0] as { msg?: unknown; type?: unknown }
    return {
      ...(typeof first.msg === "string" ? { message: first.msg } : {}),
      ...(typeof first.type === "string" ? { type: first.type } : {})
    }
  }
  const error = body as { error?: unknown; error_type?: unknown } | null
  return {
    ...(typeof error?.error === "string" ? { message: error.error } : {}),
    ...(typeof error?.error_type === "string" ? { type: error.error_type } : {})
  }
}

export const upstreamOf = (status: number | undefined, body: unknown): UpstreamAnswerDetail => {
  const { message, type } = detailOf(body)
  return { status, code: type, message: message?.slice(0, 500) }
}

const isSafety = (text: string) => /content[_ ]policy|safety|nsfw|moderat|sensitive/i.test(text)

/** The failures of one task kind. */
export const failuresOf = (kind: TaskKind) => {
  const w = words[kind]
  const make = (
    code: string,
    message: string,
    retryable: boolean,
    more: Partial<Pick<GenerationError, "transient" | "retryAfterMs" | "notAccepted" | "ambiguous" | "upstream">> = {}
  ) => new GenerationError({ code, message, retryable, transient: false, ...more })

  /** Throttled, overloaded or never sent: nothing was queued, so this or another channel may try. */
  const transient = (retryAfterMs?: number, upstream?: UpstreamAnswerDetail) =>
    make(w.unavailable, w.busy, true, { transient: true, retryAfterMs, notAccepted: true, upstream })
  /** Sent, and no answer we can trust: fal may hold a request; it is never sent again. */
  const ambiguous = () => make(w.unavailable, w.unconfirmed, true, { transient: true, ambiguous: true })
  /** The key refused, or an endpoint fal does not have: the operator's problem; another channel may take it. */
  const misconfigured = (upstream?: UpstreamAnswerDetail) =>
    make(w.unavailable, w.down, true, { notAccepted: true, upstream })
  const unsafe = (upstream?: UpstreamAnswerDetail) => make(w.failed, w.unsafe, false, { upstream })
  const invalid = (upstream?: UpstreamAnswerDetail) => make(w.failed, w.invalid, false, { upstream })

  return {
    transient,
    ambiguous,
    /** A request the endpoint has no field for: refused before anything is sent. */
    unsupported: (message: string) => make(w.failed, message, false),
    /** A download that broke off: asked again at the next poll, until the deadline. */
    fetchBroken: () => make(w.failed, w.download, true, { transient: true }),
    /** fal's file is gone (its CDN answers 403/404/410): the task fails with its refund. */
    resultExpired: () => make(w.failed, w.expired, true),
    /** A failed status or result query changes nothing upstream: asked again later, never sooner than the hint. */
    pollFailed: (headers: Headers = {}, body: unknown = null, status?: number) =>
      make(w.unavailable, w.poll, true, {
        transient: true,
        retryAfterMs: retryHintMs(headers, body),
        upstream: status === undefined ? undefined : upstreamOf(status, body)
      }),

    /** A transport failure: certainly never sent is transient (failover allowed), anything else ambiguous. */
    fromTransport: (error: HttpClientError.HttpClientError) => certainlyNotSent(error) ? transient() : ambiguous(),

    /** A refused submit, by HTTP status (fal's queue answers 202 for any input it can queue). */
    fromSubmit: (status: number, headers: Headers, body: unknown): GenerationError => {
      const upstream = upstreamOf(status, body)
      if (status === 504) return ambiguous()
      if (status === 429 || status === 408 || status >= 500) return transient(retryHintMs(headers, body), upstream)
      if (status === 401 || status === 403 || status === 404) return misconfigured(upstream)
      const { message = "", type = "" } = detailOf(body)
      if (isSafety(`${type} ${message}`)) return unsafe(upstream)
      return invalid(upstream)
    },

    /**
     * A COMPLETED request whose result fetch answered an error: 422 is the
     * runner refusing the input (or, with a content-policy type, its
     * output); any other answer of a finished request is a failed run,
     * worth a fresh task.
     */
    fromResult: (status: number, body: unknown): GenerationError => {
      const upstream = upstreamOf(status, body)
      const { message = "", type = "" } = detailOf(body)
      if (isSafety(`${type} ${message}`)) return unsafe(upstream)
      if (/cancel/i.test(message)) return make(w.failed, w.failedRun, true, { upstream })
      if (status === 422 || status === 400) return invalid(upstream)
      return make(w.failed, w.failedRun, true, { upstream })
    }
  }
}

export type Failures = ReturnType<typeof failuresOf>
