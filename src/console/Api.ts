import {
  HttpApiEndpoint,
  HttpApiGroup,
  HttpApiMiddleware,
  HttpApiSchema,
  HttpApiSecurity,
  OpenApi
} from "@effect/platform"
import { Context, Schema } from "effect"
import {
  Account,
  AccountDetail,
  Balances,
  CreateAccountRequest,
  CreateKeyRequest,
  CreditsRequest,
  IssuedKey
} from "../accounts/Account.ts"
import { AccountNotFound, InvalidAccountRequest, KeyNotFound, RateLimited } from "../accounts/Errors.ts"
import { Asset, AssetDeleted } from "../assets/Asset.ts"
import { AssetExpired, AssetNotFound } from "../assets/Errors.ts"
import { ChannelNotFound } from "../channel/Errors.ts"
import { ChannelList, ChannelObject, CheckResult, StateChange } from "../ops/ChannelsApi.ts"
import { BodyErrors, errors, httpFailures, ResourceId } from "../platform/http/ErrorContract.ts"
import { ListEnvelope } from "../platform/http/ListEnvelope.ts"
import { PageLimit, UnixSeconds } from "../platform/http/ListQuery.ts"
import { InvalidTargetUrl } from "../platform/TargetUrl.ts"
import { StorageUnavailable } from "../storage/Errors.ts"
import { InvalidTaskRequest, TaskNotCancellable, TaskNotFound } from "../tasks/Errors.ts"
import { TaskEventStream } from "../tasks/EventsApi.ts"
import { ImageTask, TaskKind, TaskStatus, VideoTask } from "../tasks/Task.ts"
import { LossLine, UsageLine } from "../usage/Api.ts"
import { InvalidReplay, UnknownEventCursor, WebhookNotConfigured } from "../webhooks/Errors.ts"
import { WebhookEventList, WebhookEventRecord, WebhookEventStatus } from "../webhooks/EventRecord.ts"
import { ReplayQueued, ReplayRequest, WebhookRequest } from "../webhooks/Webhook.ts"
import {
  CrossOrigin,
  CsrfTokenInvalid,
  EventNotResendable,
  InvalidSignInKey,
  NoAccountSelected,
  NotSignedIn,
  OperatorOnly,
  ResourceKeyNeeded
} from "./Errors.ts"
import type { Session, Viewer } from "./Session.ts"

/**
 * The console's JSON endpoints under `/console/api/`: the contract its pages
 * call, schemas only. Served with the gateway's contract (src/Gateway.ts)
 * but left out of `/openapi.json` and the typed client: the console signs in
 * by cookie, not by key, and these endpoints change with its pages. The
 * front end (console/src/api.ts) takes its request and answer types from the
 * schemas below, as types only, so no schema code reaches the browser.
 */

// ---------------------------------------------------------------------------
// Sessions and the checks of writes, as HttpApi middleware (ConsoleAuth.ts)

/** The session cookie; scoped to the console's paths, so the API never sees it. */
export const COOKIE = "mtg_console"
export const COOKIE_PATH = "/console"
/** The header every write carries the session's CSRF token in. */
export const CSRF_HEADER = "x-csrf-token"

/** The signed-in session of the request. */
export class CurrentSession extends Context.Tag("console/CurrentSession")<CurrentSession, Session>() {}

/** The signed-in session of the request and the account it shows. */
export class CurrentViewer extends Context.Tag("console/CurrentViewer")<CurrentViewer, Viewer>() {}

const cookie = { cookie: HttpApiSecurity.apiKey({ in: "cookie", key: COOKIE }) }

/** A live session from the cookie: not expired, not closed, its key (for an owner) still enabled. */
export class ConsoleSession extends HttpApiMiddleware.Tag<ConsoleSession>()("ConsoleSession", {
  provides: CurrentSession,
  failure: errors(NotSignedIn),
  security: cookie
}) {}

/** A live session that shows an account: an operator must have chosen one. */
export class ConsoleViewer extends HttpApiMiddleware.Tag<ConsoleViewer>()("ConsoleViewer", {
  provides: CurrentViewer,
  failure: errors(NotSignedIn, NoAccountSelected),
  security: cookie
}) {}

/** A live operator's session (signed in with the admin token). */
export class ConsoleOperator extends HttpApiMiddleware.Tag<ConsoleOperator>()("ConsoleOperator", {
  provides: CurrentSession,
  failure: errors(NotSignedIn, OperatorOnly),
  security: cookie
}) {}

/**
 * A sign-in or a write must come from the console's own pages: a browser
 * sends `Origin` on every POST, PUT and DELETE, and it must be ours. The
 * cookie is SameSite=Strict already; this covers older browsers and
 * same-site subdomains.
 */
export class ConsoleOrigin extends HttpApiMiddleware.Tag<ConsoleOrigin>()("ConsoleOrigin", {
  failure: errors(CrossOrigin)
}) {}

/**
 * A write carries the session's CSRF token in `X-CSRF-Token` (double
 * submit: the page reads it from `GET /console/api/session`, which another
 * site cannot read, and it is derived from the cookie it must match).
 */
export class ConsoleCsrf extends HttpApiMiddleware.Tag<ConsoleCsrf>()("ConsoleCsrf", {
  failure: errors(CsrfTokenInvalid),
  security: { csrf: HttpApiSecurity.apiKey({ in: "header", key: CSRF_HEADER }) }
}) {}

/**
 * Every answer of the console is private to the signed-in browser: it gets
 * `Cache-Control: no-store` (unless the handler named its own), so no cache
 * keeps it. On the whole group; it runs after the endpoint's own middleware.
 */
export class ConsolePrivate extends HttpApiMiddleware.Tag<ConsolePrivate>()("ConsolePrivate") {}

// ---------------------------------------------------------------------------
// Requests: bodies and query parameters, read and checked by the handlers
// (readJson, readQuery), so every refusal has the spec's error body.

/** The admin API's request schemas, which the operator's and the webhook's handlers read too (the front end's types come from here). */
export { CreateAccountRequest, CreateKeyRequest, CreditsRequest, StateChange, WebhookRequest }

export const SignInRequest = Schema.Struct({ key: Schema.String.pipe(Schema.maxLength(512)) })
export const SwitchAccountRequest = Schema.Struct({
  account_id: Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))
})

const Filter = Schema.String.pipe(Schema.minLength(1), Schema.maxLength(200))

/** The list API's filters, plus `kind` (the log shows both kinds in one order) and `model`; `limit` 20 by default. */
export const TaskLogParams = Schema.Struct({
  kind: Schema.optional(TaskKind),
  status: Schema.optional(TaskStatus),
  operation: Schema.optional(Schema.Literal("generation", "edit")),
  model: Schema.optional(Filter),
  client_reference_id: Schema.optional(Filter),
  created_after: Schema.optional(UnixSeconds),
  created_before: Schema.optional(UnixSeconds),
  after: Schema.optional(Filter),
  limit: Schema.optional(PageLimit)
})

/** Result files; `limit` 20 by default. */
export const AssetParams = Schema.Struct({
  kind: Schema.optional(TaskKind),
  task_id: Schema.optional(Filter),
  after: Schema.optional(Filter),
  limit: Schema.optional(PageLimit)
})

/** The webhook's delivery log; `limit` 20 by default. */
export const EventParams = Schema.Struct({
  status: Schema.optional(WebhookEventStatus),
  after: Schema.optional(Filter),
  limit: Schema.optional(PageLimit)
})

/** The operator's lists (accounts, an account's ledger); `limit` 50 by default. */
export const PageParams = Schema.Struct({
  after: Schema.optional(Filter),
  limit: Schema.optional(PageLimit)
})

// ---------------------------------------------------------------------------
// Answers

/** What the page knows of a signed-in session; the CSRF token lives only in the page's memory. */
export const SignedIn = Schema.Struct({
  object: Schema.Literal("console.session"),
  signed_in: Schema.Literal(true),
  role: Schema.Literal("account", "operator"),
  account: Schema.NullOr(Schema.Struct({ id: Schema.String, name: Schema.String })),
  csrf_token: Schema.String,
  expires_at: Schema.Number,
  /** The interval the API's Retry-After names; the task pages poll at it. */
  poll_interval_s: Schema.Number
})

/** Not signed in is an answer, not an error: the page then shows the sign-in form. */
export const SignedOut = Schema.Struct({
  object: Schema.Literal("console.session"),
  signed_in: Schema.Literal(false)
})

export const SessionState = Schema.Union(SignedIn, SignedOut)

export const SessionClosed = Schema.Struct({
  object: Schema.Literal("console.session"),
  signed_out: Schema.Literal(true)
})

/** A task object of either kind, as the API answers it. */
export const TaskObject = Schema.Union(VideoTask, ImageTask)
export const TaskLog = ListEnvelope(TaskObject)

/** A ledger line as the console shows it: amounts in credits, signed (a charge is negative). */
export const LedgerLine = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("ledger.entry"),
  kind: Schema.Literal("credit", "charge", "refund"),
  task_id: Schema.NullOr(Schema.String),
  key_id: Schema.NullOr(Schema.String),
  wallet_credits: Schema.Number,
  subscription_credits: Schema.Number,
  note: Schema.NullOr(Schema.String),
  created_at: Schema.Number
})

/** What only the operator sees of a task: where it ran, and the upstream columns the engine recorded. */
export const OperatorTaskView = Schema.Struct({
  channel: Schema.String,
  attempt: Schema.Number,
  charged_wallet_credits: Schema.Number,
  charged_subscription_credits: Schema.Number,
  refunded_at: Schema.NullOr(Schema.Number),
  upstream: Schema.Record({ key: Schema.String, value: Schema.Unknown })
})

/** Everything about one task: the task object, the request as stored, its ledger lines, files and webhook events. */
export const TaskPage = Schema.Struct({
  object: Schema.Literal("console.task"),
  kind: TaskKind,
  task: TaskObject,
  request: Schema.Unknown,
  ledger: Schema.Array(LedgerLine),
  assets: Schema.Array(Asset),
  webhook_events: Schema.Array(WebhookEventRecord),
  operator: Schema.optional(OperatorTaskView)
})

export const AssetList = ListEnvelope(Asset)

/** A confirmed upload whose URL still works: what inspection found, and until when the URL works. */
export const ConfirmedUpload = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("media_upload"),
  kind: Schema.Literal("image", "video", "audio"),
  filename: Schema.String,
  mime_type: Schema.String,
  size_bytes: Schema.Number,
  duration_ms: Schema.NullOr(Schema.Number),
  width: Schema.NullOr(Schema.Number),
  height: Schema.NullOr(Schema.Number),
  url: Schema.String,
  expires_at: Schema.Number,
  confirmed_at: Schema.Number
})

export const UploadList = Schema.Struct({ object: Schema.Literal("list"), data: Schema.Array(ConfirmedUpload) })

/** A replay's window, as the console's page sends it. */
export { ReplayRequest }

/** The account's webhook: URL, enabled, and the `wk-` key the owner configures the receiver with (null until set). */
export const WebhookState = Schema.Struct({
  object: Schema.Literal("webhook"),
  url: Schema.NullOr(Schema.String),
  enabled: Schema.Boolean,
  key: Schema.NullOr(Schema.String),
  /** The event types it receives; null for every type. */
  events: Schema.NullOr(Schema.Array(Schema.String)),
  /** Why failing deliveries disabled it, and when; null otherwise. */
  disabled_reason: Schema.NullOr(Schema.String),
  disabled_at: Schema.NullOr(Schema.Number)
})

export const WebhookKey = Schema.Struct({ key: Schema.String })
export const WebhookTestQueued = Schema.Struct({
  object: Schema.Literal("webhook.test.queued"),
  event_id: Schema.String
})
export const EventResent = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("webhook.event.resent"),
  status: Schema.Literal("pending")
})

/** One account in the operator's list: who, which group, and the balances. */
export const AccountSummary = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("account"),
  name: Schema.String,
  group: Schema.String,
  wallet_credits: Schema.Number,
  subscription_credits: Schema.Number,
  created_at: Schema.Number
})
export const AccountList = ListEnvelope(AccountSummary)
export const LedgerPage = ListEnvelope(LedgerLine)

export const AccountBalances = Schema.Struct({
  object: Schema.Literal("balances"),
  account_id: Schema.String,
  ...Balances.fields
})

/** The operator's overview charts (Overview.ts); times in Unix seconds, durations in ms, amounts in credits. */
export const Overview = Schema.Struct({
  object: Schema.Literal("console.overview"),
  generated_at: Schema.Number,
  /** The last 24 whole hours, oldest first: tasks created in the hour, by their status now. */
  tasks_per_hour: Schema.Array(Schema.Struct({
    hour: Schema.Number,
    queued: Schema.Int,
    in_progress: Schema.Int,
    succeeded: Schema.Int,
    failed: Schema.Int
  })),
  /** Tasks that succeeded in the last 24 hours, per channel. */
  time_to_result: Schema.Array(Schema.Struct({
    channel: Schema.String,
    tasks: Schema.Int,
    p50_ms: Schema.NullOr(Schema.Number),
    p95_ms: Schema.NullOr(Schema.Number)
  })),
  /** Tasks that failed in the last 24 hours, by error code, most first. */
  failures_by_code: Schema.Array(Schema.Struct({ code: Schema.String, count: Schema.Int })),
  /** The last 14 UTC days, oldest first. */
  credits_per_day: Schema.Array(Schema.Struct({ day: Schema.Number, charged: Schema.Number, refunded: Schema.Number })),
  /** Each deprecated model still offered, and who used it in the last 30 days (accounts, tasks created). */
  deprecated_models: Schema.Array(Schema.Struct({
    model: Schema.String,
    sunset: Schema.Number,
    successor: Schema.NullOr(Schema.String),
    accounts: Schema.Int,
    tasks: Schema.Int
  }))
})
export type Overview = typeof Overview.Type

/**
 * The operator's Money page: the margin per UTC day of the window (credits
 * net of refunds against the upstream cost) and the latest losses, as the
 * admin API's usage report and losses give them (usage/).
 */
export const Money = Schema.Struct({
  object: Schema.Literal("console.money"),
  from: Schema.Number,
  to: Schema.Number,
  days: Schema.Array(UsageLine),
  losses: Schema.Array(LossLine),
  more_losses: Schema.Boolean
})
export const MoneyParams = Schema.Struct({
  days: Schema.optional(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 366)))
})

export const DisabledKey = Schema.Struct({
  id: Schema.String,
  object: Schema.Literal("api_key"),
  kind: Schema.Literal("model", "resource"),
  disabled: Schema.Boolean,
  disabled_at: Schema.Number
})

// ---------------------------------------------------------------------------
// Endpoints. An endpoint's middleware run from the last one listed to the
// first (then the group's ConsolePrivate, then the handler), so
// `.middleware(ConsoleCsrf).middleware(ConsoleViewer).middleware(ConsoleOrigin)`
// checks the Origin, then the session, then the CSRF token.

const taskPath = Schema.Struct({
  id: ResourceId(() => new TaskNotFound({ message: "No such task under this account." }))
})
const assetPath = Schema.Struct({
  id: ResourceId(() => new AssetNotFound({ message: "No such asset under this account." }))
})
const eventPath = Schema.Struct({ id: ResourceId(() => new EventNotResendable()) })
const accountPath = Schema.Struct({ id: ResourceId(() => new AccountNotFound({ message: "No such account." })) })
const keyPath = Schema.Struct({ id: ResourceId(() => new KeyNotFound({ message: "No such key." })) })
const channelPath = Schema.Struct({ name: ResourceId(() => new ChannelNotFound({ message: "No such channel." })) })

/** A malformed or unknown query parameter (the query reader's 400). */
const QueryErrors = httpFailures(400)
/** Changing an account: it must exist, and the change must be possible. */
const AccountChange = errors(AccountNotFound, InvalidAccountRequest)
const WebhookChange = errors(AccountNotFound, WebhookNotConfigured)

const API = "/console/api"

/** An operator's change of a channel's state, with an optional reason (the admin API's StateChange body). */
const channelStateChange = <const N extends string, const A extends string>(name: N, action: A) =>
  HttpApiEndpoint.post(name, `${API}/operator/channels/:name/${action}`).setPath(channelPath)
    .addSuccess(ChannelObject)
    .addError(BodyErrors).addError(errors(ChannelNotFound))
    .middleware(ConsoleCsrf).middleware(ConsoleOperator).middleware(ConsoleOrigin)

export class ConsoleApi extends HttpApiGroup.make("console")
  // Sessions
  .add(HttpApiEndpoint.get("getSession", `${API}/session`).addSuccess(SessionState))
  .add(
    HttpApiEndpoint.post("signIn", `${API}/session`).addSuccess(SignedIn, { status: 201 })
      .addError(BodyErrors).addError(errors(InvalidSignInKey, ResourceKeyNeeded))
      .middleware(ConsoleOrigin)
  )
  .add(
    HttpApiEndpoint.del("signOut", `${API}/session`).addSuccess(SessionClosed)
      .middleware(ConsoleCsrf).middleware(ConsoleSession).middleware(ConsoleOrigin)
  )
  .add(
    HttpApiEndpoint.put("switchAccount", `${API}/session/account`).addSuccess(SignedIn)
      .addError(BodyErrors).addError(errors(AccountNotFound))
      .middleware(ConsoleCsrf).middleware(ConsoleOperator).middleware(ConsoleOrigin)
  )
  // The account's tasks and files
  .add(
    HttpApiEndpoint.get("listTasks", `${API}/tasks`).addSuccess(TaskLog)
      .addError(QueryErrors).addError(errors(InvalidTaskRequest))
      .middleware(ConsoleViewer)
  )
  .add(
    HttpApiEndpoint.get("getTask", `${API}/tasks/:id`).setPath(taskPath).addSuccess(TaskPage)
      .addError(errors(TaskNotFound, AccountNotFound))
      .middleware(ConsoleViewer)
  )
  .add(
    HttpApiEndpoint.post("cancelTask", `${API}/tasks/:id/cancel`).setPath(taskPath).addSuccess(TaskObject)
      .addError(errors(TaskNotFound, TaskNotCancellable))
      .middleware(ConsoleCsrf).middleware(ConsoleViewer).middleware(ConsoleOrigin)
  )
  .add(
    // The task page's live status: the API's event stream, bounded per session as the API's is per key.
    HttpApiEndpoint.get("taskEvents", `${API}/tasks/:id/events`).setPath(taskPath).addSuccess(TaskEventStream)
      .addError(errors(TaskNotFound, RateLimited))
      .middleware(ConsoleViewer)
  )
  .add(
    HttpApiEndpoint.get("listAssets", `${API}/assets`).addSuccess(AssetList)
      .addError(QueryErrors).addError(errors(InvalidTaskRequest))
      .middleware(ConsoleViewer)
  )
  .add(
    HttpApiEndpoint.get("getAssetContent", `${API}/assets/:id/content`).setPath(assetPath)
      .addSuccess(HttpApiSchema.Uint8Array())
      // 416 for a range outside the object, with its Content-Range.
      .addError(errors(AssetNotFound, AssetExpired, StorageUnavailable)).addError(httpFailures(416))
      .middleware(ConsoleViewer)
  )
  .add(
    HttpApiEndpoint.del("deleteAsset", `${API}/assets/:id`).setPath(assetPath).addSuccess(AssetDeleted)
      .addError(errors(AssetNotFound, StorageUnavailable))
      .middleware(ConsoleCsrf).middleware(ConsoleViewer).middleware(ConsoleOrigin)
  )
  .add(HttpApiEndpoint.get("listUploads", `${API}/uploads`).addSuccess(UploadList).middleware(ConsoleViewer))
  // The account's webhook
  .add(
    HttpApiEndpoint.get("getWebhook", `${API}/webhook`).addSuccess(WebhookState)
      .addError(errors(AccountNotFound))
      .middleware(ConsoleViewer)
  )
  .add(
    HttpApiEndpoint.put("setWebhook", `${API}/webhook`).addSuccess(WebhookState)
      .addError(BodyErrors).addError(errors(AccountNotFound, InvalidTargetUrl))
      .middleware(ConsoleCsrf).middleware(ConsoleViewer).middleware(ConsoleOrigin)
  )
  .add(
    HttpApiEndpoint.post("rotateWebhookKey", `${API}/webhook/rotate`).addSuccess(WebhookKey)
      .addError(WebhookChange)
      .middleware(ConsoleCsrf).middleware(ConsoleViewer).middleware(ConsoleOrigin)
  )
  .add(
    HttpApiEndpoint.post("testWebhook", `${API}/webhook/test`).addSuccess(WebhookTestQueued, { status: 202 })
      .addError(WebhookChange)
      .middleware(ConsoleCsrf).middleware(ConsoleViewer).middleware(ConsoleOrigin)
  )
  .add(
    HttpApiEndpoint.get("listWebhookEvents", `${API}/webhook/events`).addSuccess(WebhookEventList)
      .addError(QueryErrors).addError(errors(UnknownEventCursor, AccountNotFound))
      .middleware(ConsoleViewer)
  )
  .add(
    HttpApiEndpoint.post("resendWebhookEvent", `${API}/webhook/events/:id/resend`).setPath(eventPath)
      .addSuccess(EventResent, { status: 202 })
      .addError(errors(EventNotResendable))
      .middleware(ConsoleCsrf).middleware(ConsoleViewer).middleware(ConsoleOrigin)
  )
  .add(
    HttpApiEndpoint.post("replayWebhookEvents", `${API}/webhook/replay`).addSuccess(ReplayQueued, { status: 202 })
      .addError(BodyErrors).addError(errors(AccountNotFound, WebhookNotConfigured, InvalidReplay))
      .middleware(ConsoleCsrf).middleware(ConsoleViewer).middleware(ConsoleOrigin)
  )
  // The operator's pages
  .add(
    HttpApiEndpoint.get("listAccounts", `${API}/operator/accounts`).addSuccess(AccountList)
      .addError(QueryErrors)
      .middleware(ConsoleOperator)
  )
  .add(
    HttpApiEndpoint.post("createAccount", `${API}/operator/accounts`).addSuccess(Account, { status: 201 })
      .addError(BodyErrors).addError(errors(InvalidAccountRequest))
      .middleware(ConsoleCsrf).middleware(ConsoleOperator).middleware(ConsoleOrigin)
  )
  .add(
    HttpApiEndpoint.get("getAccount", `${API}/operator/accounts/:id`).setPath(accountPath).addSuccess(AccountDetail)
      .addError(errors(AccountNotFound))
      .middleware(ConsoleOperator)
  )
  .add(
    HttpApiEndpoint.get("getAccountLedger", `${API}/operator/accounts/:id/ledger`).setPath(accountPath)
      .addSuccess(LedgerPage)
      .addError(QueryErrors).addError(errors(AccountNotFound))
      .middleware(ConsoleOperator)
  )
  .add(
    HttpApiEndpoint.post("addCredits", `${API}/operator/accounts/:id/credits`).setPath(accountPath)
      .addSuccess(AccountBalances)
      .addError(BodyErrors).addError(AccountChange)
      .middleware(ConsoleCsrf).middleware(ConsoleOperator).middleware(ConsoleOrigin)
  )
  .add(
    HttpApiEndpoint.post("createKey", `${API}/operator/accounts/:id/keys`).setPath(accountPath)
      .addSuccess(IssuedKey, { status: 201 })
      .addError(BodyErrors).addError(AccountChange)
      .middleware(ConsoleCsrf).middleware(ConsoleOperator).middleware(ConsoleOrigin)
  )
  .add(
    HttpApiEndpoint.post("disableKey", `${API}/operator/keys/:id/disable`).setPath(keyPath).addSuccess(DisabledKey)
      .addError(errors(KeyNotFound))
      .middleware(ConsoleCsrf).middleware(ConsoleOperator).middleware(ConsoleOrigin)
  )
  .add(
    HttpApiEndpoint.get("getOverview", `${API}/operator/overview`).addSuccess(Overview)
      .middleware(ConsoleOperator)
  )
  .add(
    HttpApiEndpoint.get("getMoney", `${API}/operator/money`).addSuccess(Money)
      .addError(httpFailures(400))
      .middleware(ConsoleOperator)
  )
  .add(
    HttpApiEndpoint.get("listChannels", `${API}/operator/channels`).addSuccess(ChannelList).middleware(ConsoleOperator)
  )
  .add(channelStateChange("enableChannel", "enable"))
  .add(channelStateChange("drainChannel", "drain"))
  .add(channelStateChange("disableChannel", "disable"))
  .add(
    HttpApiEndpoint.post("checkChannel", `${API}/operator/channels/:name/check`).setPath(channelPath)
      .addSuccess(CheckResult)
      .addError(errors(ChannelNotFound))
      .middleware(ConsoleCsrf).middleware(ConsoleOperator).middleware(ConsoleOrigin)
  )
  .middleware(ConsolePrivate)
  // Internal to the console's pages: not in /openapi.json (nor in the typed client, src/ClientApi.ts).
  .annotate(OpenApi.Exclude, true)
{}
