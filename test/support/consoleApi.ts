import { Cookies, HttpApi, HttpApiClient, HttpClient, HttpClientRequest } from "@effect/platform"
import { Effect } from "effect"
import { gatewayHttp, normalize } from "../../src/client/Http.ts"
import { refine } from "../../src/ClientApi.ts"
import {
  AssetParams,
  ConsoleApi,
  CreateAccountRequest,
  CreateKeyRequest,
  CreditsRequest,
  CSRF_HEADER,
  EventParams,
  PageParams,
  ReplayRequest,
  SignInRequest,
  StateChange,
  SwitchAccountRequest,
  TaskLogParams,
  WebhookRequest
} from "../../src/console/Api.ts"
import { run } from "./api.ts"
import type { Target } from "./wire.ts"

/**
 * The console's own API (`/console/api`, `ConsoleApi` in src/console/Api.ts)
 * as tests call it: `HttpApiClient` derived from the console's group, with
 * the request bodies and query parameters its handlers read by hand declared
 * from the schemas they check against (the same types console/src/api.ts
 * sends). A session's cookie rides on every call and its CSRF token on every
 * write, as the page sends them. Answers are decoded; a status other than the
 * contract's fails, a refusal rejects with `GatewayError`. A refusal of the
 * session or the write checks themselves (no cookie, no token, another
 * origin, a bad key) is sent with `raw` and checked with `expectError`.
 */
const ConsoleClientApi = refine(HttpApi.make("console").add(ConsoleApi), "console", {
  signIn: (e) => e.setPayload(SignInRequest),
  switchAccount: (e) => e.setPayload(SwitchAccountRequest),
  listTasks: (e) => e.setUrlParams(TaskLogParams),
  listAssets: (e) => e.setUrlParams(AssetParams),
  setWebhook: (e) => e.setPayload(WebhookRequest),
  replayWebhookEvents: (e) => e.setPayload(ReplayRequest),
  listWebhookEvents: (e) => e.setUrlParams(EventParams),
  listAccounts: (e) => e.setUrlParams(PageParams),
  createAccount: (e) => e.setPayload(CreateAccountRequest),
  getAccountLedger: (e) => e.setUrlParams(PageParams),
  addCredits: (e) => e.setPayload(CreditsRequest),
  createKey: (e) => e.setPayload(CreateKeyRequest),
  // The page always sends the body of a state change (`{}` without a reason).
  enableChannel: (e) => e.setPayload(StateChange),
  drainChannel: (e) => e.setPayload(StateChange),
  disableChannel: (e) => e.setPayload(StateChange)
})

/** What a session sends: its cookie (`name=value`) and the CSRF token of its writes. */
export interface ConsoleCredentials {
  readonly cookie?: string | undefined
  readonly csrf?: string | undefined
}

const isRead = (method: string) => method === "GET" || method === "HEAD"

const consoleClient = (gw: Target, credentials: ConsoleCredentials) =>
  Effect.flatMap(HttpClient.HttpClient, (http) =>
    HttpApiClient.group(ConsoleClientApi, {
      group: "console",
      httpClient: HttpClient.mapRequest(gatewayHttp(http), (request) => {
        let sent = request
        if (credentials.cookie !== undefined) sent = HttpClientRequest.setHeader(sent, "cookie", credentials.cookie)
        if (credentials.csrf !== undefined && !isRead(sent.method)) {
          sent = HttpClientRequest.setHeader(sent, CSRF_HEADER, credentials.csrf)
        }
        return sent
      }),
      baseUrl: gw.url
    }))

export type ConsoleClient = Effect.Effect.Success<ReturnType<typeof consoleClient>>

/**
 * Calls of the console's API on `gw` with a session's credentials:
 * `consoleApi(gw, session)((c) => c.getTask({ path: { id } }))`.
 */
export const consoleApi = (gw: Target, credentials: ConsoleCredentials = {}) => {
  const client = run(gw, {}, consoleClient(gw, credentials))
  return <A, E>(f: (c: ConsoleClient) => Effect.Effect<A, E>): Promise<A> =>
    client.then((c) => run(gw, {}, normalize(f(c))))
}

/**
 * Signs in with `key` (a resource key or the admin token) through the
 * console's sign-in: the decoded session, its cookie and CSRF token, and
 * `call` for the console's API as that session.
 */
export const consoleSignIn = async (gw: Target, key: string) => {
  const [session, response] = await consoleApi(gw)((c) => c.signIn({ payload: { key }, withResponse: true }))
  const cookie = Cookies.toCookieHeader(response.cookies)
  if (cookie === "") throw new Error("the console's sign-in set no cookie")
  const credentials = { cookie, csrf: session.csrf_token }
  return { session, response, ...credentials, call: consoleApi(gw, credentials) }
}
export type ConsoleSession = Awaited<ReturnType<typeof consoleSignIn>>
