import { HttpClientRequest } from "@effect/platform"
import { modelOf, versionOf } from "./Endpoints.ts"

/**
 * Replicate's HTTP requests (docs/adapters/replicate.md, Protocol). A route's
 * `upstream_model` is `owner/name` (the model-scoped endpoint, which runs the
 * model's latest version; official models only work there) or
 * `owner/name:version` (the version endpoint, with `version` in the body).
 */

/** `21600` → `6h`, `5430` → `1h30m30s`: the duration syntax `Cancel-After` takes. */
export const cancelAfter = (seconds: number) => {
  const h = Math.floor(seconds / 3600)
  const m = Math.floor((seconds % 3600) / 60)
  const s = seconds % 60
  return `${h > 0 ? `${h}h` : ""}${m > 0 ? `${m}m` : ""}${s > 0 || seconds === 0 ? `${s}s` : ""}`
}

export const createRequest = (
  base: string,
  token: string,
  upstreamModel: string,
  input: Record<string, unknown>,
  deadlineS: number,
  callbackUrl: string | undefined
) => {
  const version = versionOf(upstreamModel)
  const url = version === undefined ? `${base}/models/${modelOf(upstreamModel)}/predictions` : `${base}/predictions`
  return HttpClientRequest.post(url).pipe(
    HttpClientRequest.bearerToken(token),
    // Replicate stops the prediction when we give up on it, so a task we failed and refunded is not run (and billed) on.
    HttpClientRequest.setHeader("cancel-after", cancelAfter(deadlineS)),
    HttpClientRequest.bodyUnsafeJson({
      ...(version === undefined ? {} : { version }),
      input,
      // Only when the channel takes callbacks: one webhook, when the prediction is done.
      ...(callbackUrl === undefined ? {} : { webhook: callbackUrl, webhook_events_filter: ["completed"] })
    })
  )
}

export const getRequest = (base: string, token: string, id: string) =>
  HttpClientRequest.get(`${base}/predictions/${encodeURIComponent(id)}`).pipe(HttpClientRequest.bearerToken(token))

export const cancelRequest = (base: string, token: string, id: string) =>
  HttpClientRequest.post(`${base}/predictions/${encodeURIComponent(id)}/cancel`).pipe(
    HttpClientRequest.bearerToken(token)
  )

/** `GET {base}/account`: free, and refused with a bad token (the channel check). */
export const accountRequest = (base: string, token: string) =>
  HttpClientRequest.get(`${base}/account`).pipe(HttpClientRequest.bearerToken(token))

/** `GET {base}/predictions`: the account's predictions, newest first, 100 a page (reconciliation). */
export const listRequest = (base: string, token: string) =>
  HttpClientRequest.get(`${base}/predictions`).pipe(HttpClientRequest.bearerToken(token))

/** The next page Replicate names (`next`), only under our base URL: the token is never sent elsewhere. */
export const nextPageRequest = (base: string, token: string, next: unknown) =>
  typeof next === "string" && next.startsWith(`${base}/predictions?`)
    ? HttpClientRequest.get(next).pipe(HttpClientRequest.bearerToken(token))
    : undefined
