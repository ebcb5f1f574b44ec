import type { HttpClientError } from "@effect/platform"

/**
 * Whether a failed upstream request certainly never reached the upstream:
 * the connection was refused or the name did not resolve, before a byte of
 * the request was sent. Only then may an adapter send it again without
 * risking a second upstream task (and a second charge to the operator);
 * anything else (a reset, a time-out after sending) is ambiguous.
 */
const NOT_SENT = new Set(["ECONNREFUSED", "ENOTFOUND", "EAI_AGAIN", "EHOSTUNREACH", "ENETUNREACH", "ECONNABORTED"])

/** The system error code under a transport error, however deep the runtime's client wrapped it. */
const errorCode = (cause: unknown): string | undefined => {
  for (
    let c = cause, depth = 0;
    c !== null && typeof c === "object" && depth < 4;
    c = (c as { cause?: unknown }).cause, depth++
  ) {
    const code = (c as { code?: unknown }).code
    if (typeof code === "string") return code
  }
  return undefined
}

export const certainlyNotSent = (error: HttpClientError.HttpClientError): boolean =>
  error._tag === "RequestError" && NOT_SENT.has(errorCode(error.cause) ?? "")
