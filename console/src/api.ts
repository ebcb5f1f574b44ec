/** The console's calls to its own server (src/console/); the session rides in an HttpOnly cookie. */

/** The session's CSRF token: kept only in this page's memory, sent on every write. */
let csrfToken = ""
export const setCsrfToken = (token: string) => {
  csrfToken = token
}

export class ApiError extends Error {
  constructor(readonly status: number, readonly code: string, message: string) {
    super(message)
  }
}

/** Listeners told when the server says the session is gone (expired, signed out elsewhere, key disabled). */
const signedOutListeners = new Set<() => void>()
export const onSignedOut = (listener: () => void) => {
  signedOutListeners.add(listener)
  return () => signedOutListeners.delete(listener)
}

export const api = async <T = any>(
  method: "GET" | "POST" | "PUT" | "DELETE",
  path: string,
  body?: unknown
): Promise<T> => {
  const headers: Record<string, string> = { accept: "application/json" }
  if (body !== undefined) headers["content-type"] = "application/json"
  if (method !== "GET") headers["x-csrf-token"] = csrfToken
  const res = await fetch(`/console/api${path}`, {
    method,
    headers,
    credentials: "same-origin",
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const data = await res.json().catch(() => null)
  if (!res.ok) {
    if (res.status === 401) signedOutListeners.forEach((l) => l())
    throw new ApiError(
      res.status,
      data?.error?.code ?? "error",
      data?.error?.message ?? `The server answered ${res.status}.`
    )
  }
  return data as T
}

/** A query string from the set values only. */
export const query = (params: Record<string, string | number | undefined | null>) => {
  const search = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== null && v !== "") search.set(k, String(v))
  const text = search.toString()
  return text === "" ? "" : `?${text}`
}

/** A result file as the console's asset endpoints answer it (the API's asset object, less what pages do not show). */
export interface Asset {
  readonly id: string
  readonly task_id: string
  readonly kind: "video" | "image"
  readonly mime_type: string
  readonly filename: string
  readonly size_bytes: number
  readonly width?: number
  readonly height?: number
  readonly duration_ms?: number
  readonly expires_at: number | null
}

export interface ListPage<T> {
  readonly data: ReadonlyArray<T>
  readonly has_more: boolean
  readonly first_id: string | null
  readonly last_id: string | null
}

export interface SessionInfo {
  readonly signed_in: boolean
  readonly role?: "account" | "operator"
  readonly account?: { readonly id: string; readonly name: string } | null
  readonly csrf_token?: string
  readonly poll_interval_s?: number
}

/** The URL through which the page loads an asset's bytes (same origin, the session authorises it). */
export const assetUrl = (assetId: string, download = false) =>
  `/console/api/assets/${encodeURIComponent(assetId)}/content${download ? "?download=1" : ""}`
