import {
  type GenerationError,
  retryHintMs,
  type UpstreamAnswer,
  type UpstreamAnswerDetail,
  withUpstream
} from "../../src/channel/contract/Adapter.ts"
import {
  ambiguous,
  invalid,
  misconfigured,
  transient,
  unsafe,
  videoFailure
} from "../../src/channel/contract/VideoFailures.ts"
export {
  ambiguous,
  fetchBroken,
  fromTransport,
  resultExpired,
  unsupported
} from "../../src/channel/contract/VideoFailures.ts"

/**
 * What MiniMax's refusals and failures mean for the task
 * (docs/adapters/minimax.md, Failures). MiniMax answers most errors with
 * HTTP 200 and `base_resp.status_code` other than 0 (its error-code page),
 * so the code decides first and the HTTP status only for answers without
 * one (a proxy's page, a gateway in front). Every failure is the spec's
 * `video_task_failed` with a message of ours: MiniMax's codes and messages
 * reach the log and `task_attempts` only.
 */

interface BaseResp {
  readonly status_code?: unknown
  readonly status_msg?: unknown
}

/** `base_resp.status_code` of a MiniMax answer; undefined when the body is not MiniMax's envelope. */
export const codeOf = (body: unknown): number | undefined => {
  const code = (body as { base_resp?: BaseResp } | null)?.base_resp?.status_code
  return typeof code === "number" ? code : undefined
}

/** MiniMax's own code and message, for operators (the contract's `answerDetail` reads no `base_resp`). */
export const detailOf = (answer: Pick<UpstreamAnswer, "status" | "text" | "body">): UpstreamAnswerDetail => {
  const base = (answer.body as { base_resp?: BaseResp } | null)?.base_resp
  const code = codeOf(answer.body)
  const message = typeof base?.status_msg === "string" ? base.status_msg : answer.text.trim()
  return { status: answer.status, code: code === undefined ? undefined : String(code), message: message.slice(0, 500) }
}

/** Whether MiniMax took the exchange: HTTP 2xx with `base_resp.status_code` 0. */
export const isAccepted = (answer: Pick<UpstreamAnswer, "status" | "body">) =>
  answer.status >= 200 && answer.status <= 299 && codeOf(answer.body) === 0

/** A query's answer about a task (HTTP 2xx with a `status`), whatever `base_resp` says of the task. */
export const isTaskAnswer = (answer: Pick<UpstreamAnswer, "status" | "body">) =>
  answer.status >= 200 && answer.status <= 299 &&
  typeof (answer.body as { status?: unknown } | null)?.status === "string"

/** 1002: the request rate (RPM); 1039: the token rate (TPM). */
const RATE = new Set([1002, 1039])
/** 1000 unknown error, 1013 and 1024 internal errors, 1033 system error: MiniMax's own trouble. */
const SERVER = new Set([1000, 1013, 1024, 1033])
/** 1004 authentication failed, 2049 invalid API key, 1008 insufficient balance. */
const ACCOUNT = new Set([1004, 1008, 2049])
/** 1026: the input is sensitive; 1027: the output is. */
const SENSITIVE = new Set([1026, 1027])
/** 2013 invalid parameters, 1042 illegal characters in the input. */
const PARAMETERS = new Set([2013, 1042])

/** MiniMax refused the channel's key (1004 authentication failed, 2049 invalid API key): what the check calls credentials_refused. */
export const isAuthRefused = (code: number | undefined) => code === 1004 || code === 2049

/** A create MiniMax refused, by its code first, then by HTTP status. */
export const fromCreate = (answer: UpstreamAnswer): GenerationError => {
  const code = codeOf(answer.body)
  const hint = retryHintMs(answer.headers, answer.body)
  const mapped = (() => {
    if (code !== undefined && RATE.has(code)) return transient(hint, true)
    if (code !== undefined && SERVER.has(code)) return transient(hint, false)
    // 1001: MiniMax's own time-out; the task may have been created.
    if (code === 1001) return ambiguous()
    if (code !== undefined && ACCOUNT.has(code)) return misconfigured()
    if (code !== undefined && SENSITIVE.has(code)) return unsafe()
    if (code !== undefined && PARAMETERS.has(code)) return invalid("reference images")
    if (code !== undefined && code !== 0) return videoFailure("The video could not be generated.", true)
    if (answer.status === 504) return ambiguous()
    if (answer.status === 429 || answer.status >= 500) return transient(hint, answer.status === 429)
    if (answer.status === 401 || answer.status === 403) return misconfigured()
    return invalid("reference images")
  })()
  return withUpstream(mapped, detailOf(answer))
}

/** A poll, retrieve or download that did not work this time: asked again later, never sooner than the hint. */
export const pollFailed = (answer?: UpstreamAnswer) =>
  videoFailure("Polling the video service failed.", true, {
    transient: true,
    retryAfterMs: answer === undefined ? undefined : retryHintMs(answer.headers, answer.body),
    throttled: answer === undefined
      ? undefined
      : RATE.has(codeOf(answer.body) ?? -1) || (codeOf(answer.body) === undefined && answer.status === 429)
  })

/**
 * A task MiniMax ended `Fail`: a sensitive input or output (1026, 1027)
 * fails the same way again; anything else is worth a fresh task.
 */
export const fromTaskFailure = (code: number | undefined): GenerationError =>
  code !== undefined && SENSITIVE.has(code)
    ? unsafe()
    : code !== undefined && PARAMETERS.has(code)
    ? invalid("reference images")
    : videoFailure("The video could not be generated.", true)
