/**
 * The console's calls to its own server (src/console/); the session rides in
 * an HttpOnly cookie. Every request and answer type comes from the server's
 * contract (src/console/Api.ts), imported as types only: an answer is the
 * success type of the endpoint a call names, a request body or query the
 * wire form (`Encoded`) of the schema its handler decodes it with. Nothing of
 * Effect reaches the bundle: the calls themselves are plain `fetch`.
 */
import type { HttpApiEndpoint, HttpApiGroup } from "@effect/platform"
import type * as Api from "../../src/console/Api.ts"

type Endpoints = HttpApiGroup.HttpApiGroup.Endpoints<typeof Api.ConsoleApi>
type EndpointName = HttpApiEndpoint.HttpApiEndpoint.Name<Endpoints>
type Endpoint<N extends EndpointName> = HttpApiEndpoint.HttpApiEndpoint.WithName<Endpoints, N>
type MethodOf<N extends EndpointName> = Endpoint<N>["method"]

/** What an endpoint answers with on success, as its contract declares it. */
export type Answer<N extends EndpointName> = HttpApiEndpoint.HttpApiEndpoint.Success<Endpoint<N>>

/** The JSON form of a request schema: what the page sends. */
type Wire<S extends { readonly Encoded: unknown }> = S["Encoded"]

/** The types the pages name; the rest they take from the calls' answers. */
export type SessionState = Answer<"getSession">
export type SignedIn = Answer<"signIn">
export type TaskObject = Answer<"getTask">["task"]
export type Asset = Answer<"listAssets">["data"][number]
export type WebhookEvent = Answer<"listWebhookEvents">["data"][number]
export type WebhookAttempt = WebhookEvent["attempts"][number]
export type TaskLogQuery = Wire<typeof Api.TaskLogParams>
export type Channel = Answer<"listChannels">["data"][number]
export type ChannelCheck = Answer<"checkChannel">
export type Overview = Answer<"getOverview">
export type Money = Answer<"getMoney">
export type ChannelAction = "enable" | "drain" | "disable"

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

/** The error body every refusal has: `{ error: { type, code, message, request_id } }`. */
type ErrorBody = { readonly error?: { readonly code?: unknown; readonly message?: unknown } } | null

/**
 * One call of the endpoint `N` (a type argument only), whose method the
 * contract fixes (a wrong one does not compile); `path` is under `/console/api`.
 */
const call = async <N extends EndpointName>(
  method: MethodOf<N>,
  path: string,
  body?: unknown
): Promise<Answer<N>> => {
  const headers: Record<string, string> = { accept: "application/json" }
  if (body !== undefined) headers["content-type"] = "application/json"
  if (method !== "GET") headers["x-csrf-token"] = csrfToken
  const res = await fetch(`/console/api${path}`, {
    method,
    headers,
    credentials: "same-origin",
    ...(body === undefined ? {} : { body: JSON.stringify(body) })
  })
  const data: unknown = await res.json().catch(() => null)
  if (!res.ok) {
    if (res.status === 401) signedOutListeners.forEach((l) => l())
    const error = (data as ErrorBody)?.error
    throw new ApiError(
      res.status,
      typeof error?.code === "string" ? error.code : "error",
      typeof error?.message === "string" ? error.message : `The server answered ${res.status}.`
    )
  }
  return data as Answer<N>
}

/** A query string from the set values only. */
const query = (params: Readonly<Record<string, string | undefined>>) => {
  const search = new URLSearchParams()
  for (const [k, v] of Object.entries(params)) if (v !== undefined && v !== "") search.set(k, v)
  const text = search.toString()
  return text === "" ? "" : `?${text}`
}

const segment = encodeURIComponent

/** Every call the pages make, by the endpoint it goes to. */
export const api = {
  session: () => call<"getSession">("GET", "/session"),
  signIn: (body: Wire<typeof Api.SignInRequest>) => call<"signIn">("POST", "/session", body),
  signOut: () => call<"signOut">("DELETE", "/session"),
  switchAccount: (body: Wire<typeof Api.SwitchAccountRequest>) =>
    call<"switchAccount">("PUT", "/session/account", body),

  tasks: (params: TaskLogQuery) => call<"listTasks">("GET", `/tasks${query(params)}`),
  task: (id: string) => call<"getTask">("GET", `/tasks/${segment(id)}`),
  cancelTask: (id: string) => call<"cancelTask">("POST", `/tasks/${segment(id)}/cancel`),
  assets: (params: Wire<typeof Api.AssetParams>) => call<"listAssets">("GET", `/assets${query(params)}`),
  deleteAsset: (id: string) => call<"deleteAsset">("DELETE", `/assets/${segment(id)}`),
  uploads: () => call<"listUploads">("GET", "/uploads"),

  webhook: () => call<"getWebhook">("GET", "/webhook"),
  setWebhook: (body: Wire<typeof Api.WebhookRequest>) => call<"setWebhook">("PUT", "/webhook", body),
  rotateWebhookKey: () => call<"rotateWebhookKey">("POST", "/webhook/rotate"),
  testWebhook: () => call<"testWebhook">("POST", "/webhook/test"),
  webhookEvents: (params: Wire<typeof Api.EventParams>) =>
    call<"listWebhookEvents">("GET", `/webhook/events${query(params)}`),
  resendEvent: (id: string) => call<"resendWebhookEvent">("POST", `/webhook/events/${segment(id)}/resend`),
  replayWebhook: (body: Wire<typeof Api.ReplayRequest>) => call<"replayWebhookEvents">("POST", "/webhook/replay", body),

  accounts: (params: Wire<typeof Api.PageParams>) => call<"listAccounts">("GET", `/operator/accounts${query(params)}`),
  createAccount: (body: Wire<typeof Api.CreateAccountRequest>) =>
    call<"createAccount">("POST", "/operator/accounts", body),
  account: (id: string) => call<"getAccount">("GET", `/operator/accounts/${segment(id)}`),
  accountLedger: (id: string, params: Wire<typeof Api.PageParams>) =>
    call<"getAccountLedger">("GET", `/operator/accounts/${segment(id)}/ledger${query(params)}`),
  addCredits: (id: string, body: Wire<typeof Api.CreditsRequest>) =>
    call<"addCredits">("POST", `/operator/accounts/${segment(id)}/credits`, body),
  createKey: (id: string, body: Wire<typeof Api.CreateKeyRequest>) =>
    call<"createKey">("POST", `/operator/accounts/${segment(id)}/keys`, body),
  disableKey: (id: string) => call<"disableKey">("POST", `/operator/keys/${segment(id)}/disable`),

  overview: () => call<"getOverview">("GET", "/operator/overview"),
  money: () => call<"getMoney">("GET", "/operator/money"),
  channels: () => call<"listChannels">("GET", "/operator/channels"),
  setChannelState: (name: string, action: ChannelAction, body: Wire<typeof Api.StateChange>) =>
    call<"enableChannel" | "drainChannel" | "disableChannel">(
      "POST",
      `/operator/channels/${segment(name)}/${action}`,
      body
    ),
  checkChannel: (name: string) => call<"checkChannel">("POST", `/operator/channels/${segment(name)}/check`)
}

/** The URL through which the page loads an asset's bytes (same origin, the session authorises it). */
/** A task's live status stream (server-sent events), for an `EventSource`: the session's cookie rides along. */
export const taskEventsUrl = (id: string) => `/console/api/tasks/${segment(id)}/events`

export const assetUrl = (assetId: string, download = false) =>
  `/console/api/assets/${segment(assetId)}/content${download ? "?download=1" : ""}`
