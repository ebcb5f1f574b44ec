import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { AdminAuth } from "../accounts/Security.ts"
import { ChannelStateName } from "../channel/ChannelState.ts"
import { ChannelNotFound } from "../channel/Errors.ts"
import { BodyErrors, errors, httpFailures, ResourceId } from "../platform/http/ErrorContract.ts"
import { UnixSeconds } from "../platform/http/ListQuery.ts"
import { jsonBody } from "../platform/http/OpenApiBody.ts"
import { InvalidReconcileWindow, ReconciliationFailed, ReconciliationUnavailable } from "./Errors.ts"

const channelPath = Schema.Struct({
  name: ResourceId(() => new ChannelNotFound({ message: "No such channel." }))
})

/** One replica's circuit breaker of the channel, as it last reported it. */
export const ReplicaBreaker = Schema.Struct({
  replica: Schema.String,
  open: Schema.Boolean,
  /** When it closes again (ms); null when closed. */
  open_until: Schema.NullOr(Schema.Number),
  reported_at: Schema.Number
})

/** The operator's view of a channel (docs/operating.md, Channels). Times are ms unless named `_s`. */
export const ChannelObject = Schema.Struct({
  object: Schema.Literal("channel"),
  name: Schema.String,
  adapter: Schema.String,
  kinds: Schema.Array(Schema.Literal("video", "image")),
  base_url: Schema.NullOr(Schema.String),
  state: ChannelStateName,
  reason: Schema.NullOr(Schema.String),
  state_changed_at: Schema.NullOr(Schema.Number),
  concurrency: Schema.Int,
  in_flight: Schema.Int,
  waiting: Schema.Int,
  breakers: Schema.Array(ReplicaBreaker),
  last_15_minutes: Schema.Struct({
    submitted: Schema.Int,
    succeeded: Schema.Int,
    failed: Schema.Int,
    failed_over: Schema.Int,
    p50_ms: Schema.NullOr(Schema.Number),
    p95_ms: Schema.NullOr(Schema.Number)
  }),
  /** The upstream's last refusal or failure in its own words; `at` in Unix seconds. */
  last_upstream_error: Schema.NullOr(Schema.Struct({
    at: Schema.Number,
    status: Schema.NullOr(Schema.Int),
    code: Schema.NullOr(Schema.String),
    message: Schema.NullOr(Schema.String)
  }))
})
export type ChannelObject = typeof ChannelObject.Type

export const ChannelList = Schema.Struct({ object: Schema.Literal("list"), data: Schema.Array(ChannelObject) })

/** The optional body of a state change. */
export const StateChange = Schema.Struct({
  reason: Schema.optional(Schema.NullOr(Schema.String.pipe(Schema.maxLength(500))))
})

export const CheckResult = Schema.Struct({
  ok: Schema.Boolean,
  result: Schema.Literal("ok", "credentials_refused", "unreachable", "unexpected_answer", "model_not_found_upstream"),
  detail: Schema.String,
  latency_ms: Schema.Int
})

/** `?from=&to=`: the window a reconciliation compares, in Unix seconds. */
export const ReconcileWindow = Schema.Struct({ from: UnixSeconds, to: UnixSeconds })

/** A usage as the provider or the attempt tells it: `unit`, `quantity` and the provider's own fields. */
const UsageObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/**
 * What a channel's provider says it ran in a window against the attempts recorded (docs/operating.md,
 * Reconciling a channel). Times are Unix seconds; `cost` in the operator's money.
 */
export const Reconciliation = Schema.Struct({
  object: Schema.Literal("channel.reconciliation"),
  channel: Schema.String,
  adapter: Schema.String,
  from: Schema.Int,
  to: Schema.Int,
  /** Tasks the provider lists as created in the window. */
  provider_tasks: Schema.Int,
  /** Attempts recorded in the window with an upstream id. */
  attempts: Schema.Int,
  /** Tasks the provider ran that no attempt knows: creates whose answer was lost, or not ours. */
  lost_creates: Schema.Array(Schema.Struct({
    upstream_id: Schema.String,
    created_at: Schema.Int,
    model: Schema.NullOr(Schema.String),
    status: Schema.NullOr(Schema.String),
    usage: Schema.NullOr(UsageObject),
    billed: Schema.NullOr(Schema.Boolean)
  })),
  /** Attempts whose upstream id the provider's record does not have. */
  unseen_attempts: Schema.Array(Schema.Struct({
    upstream_id: Schema.String,
    task_id: Schema.String,
    attempt: Schema.Int,
    outcome: Schema.String,
    created_at: Schema.Int
  })),
  /** Tasks whose usage, or whether they are billed, the provider tells otherwise than the attempt recorded. */
  usage_mismatches: Schema.Array(Schema.Struct({
    upstream_id: Schema.String,
    task_id: Schema.String,
    attempt: Schema.Int,
    provider: Schema.Struct({ usage: Schema.NullOr(UsageObject), billed: Schema.NullOr(Schema.Boolean) }),
    recorded: Schema.Struct({
      usage: Schema.NullOr(UsageObject),
      billed: Schema.NullOr(Schema.Boolean),
      cost: Schema.NullOr(Schema.Number)
    })
  }))
})
export type Reconciliation = typeof Reconciliation.Type

const stateChange = <const N extends string, const P extends `/${string}`>(name: N, path: P) =>
  HttpApiEndpoint.post(name, path).setPath(channelPath).addSuccess(ChannelObject)
    .addError(BodyErrors).addError(errors(ChannelNotFound))
    .annotate(OpenApi.Override, { requestBody: { ...jsonBody(StateChange).requestBody, required: false } })

/** The operator's channels: the view, the state changes and the check; bearer ADMIN_TOKEN. */
export class AdminChannelsApi extends HttpApiGroup.make("adminChannels")
  .add(HttpApiEndpoint.get("listChannels", "/admin/v1/channels").addSuccess(ChannelList))
  .add(
    HttpApiEndpoint.get("getChannel", "/admin/v1/channels/:name").setPath(channelPath).addSuccess(ChannelObject)
      .addError(errors(ChannelNotFound))
  )
  .add(stateChange("enableChannel", "/admin/v1/channels/:name/enable"))
  .add(stateChange("drainChannel", "/admin/v1/channels/:name/drain"))
  .add(stateChange("disableChannel", "/admin/v1/channels/:name/disable"))
  .add(
    HttpApiEndpoint.post("checkChannel", "/admin/v1/channels/:name/check").setPath(channelPath).addSuccess(CheckResult)
      .addError(errors(ChannelNotFound))
  )
  .add(
    HttpApiEndpoint.post("reconcileChannel", "/admin/v1/channels/:name/reconcile").setPath(channelPath)
      .addSuccess(Reconciliation)
      .addError(httpFailures(400))
      .addError(errors(ChannelNotFound, InvalidReconcileWindow, ReconciliationUnavailable, ReconciliationFailed))
  )
  .middleware(AdminAuth)
  .annotate(OpenApi.Title, "Administration: channels")
  .annotate(
    OpenApi.Description,
    "Each channel's state (enabled, draining, disabled), load, breakers, recent results and last upstream error; the check; reconciliation against the provider's own record"
  )
{}
