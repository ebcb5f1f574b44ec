import { ParseResult, Schema } from "effect"

/**
 * Shapes of the JSON files in `config/`. Unknown keys are errors, so a typo
 * in an operator's file stops the start instead of being silently ignored.
 */

const PositiveInt = Schema.Int.pipe(Schema.positive())
const NonNegative = Schema.Number.pipe(Schema.nonNegative())

export const RateLimit = Schema.Struct({
  /** Tokens refilled per second. */
  per_second: Schema.Number.pipe(Schema.positive()),
  /** Bucket size: requests allowed at once after a quiet period. */
  burst: PositiveInt
})
export type RateLimit = typeof RateLimit.Type

export const RateClass = Schema.Literal("create", "read", "upload")
export type RateClass = typeof RateClass.Type

/** The task engine's timing (docs/configuration.md, `limits.json`: `engine`; docs/engine.md). */
export const EngineSettings = Schema.Struct({
  /** How long a claim holds a task without a heartbeat before the reaper takes it back. */
  lease_s: Schema.optionalWith(Schema.Number.pipe(Schema.positive()), { default: () => 30 }),
  /** How often a worker extends the leases of the tasks it runs. */
  heartbeat_s: Schema.optionalWith(Schema.Number.pipe(Schema.positive()), { default: () => 10 }),
  /** Idle workers look for queued tasks at least this often, NOTIFY or not. */
  poll_interval_ms: Schema.optionalWith(PositiveInt, { default: () => 1000 }),
  /** How often expired leases are looked for. */
  reaper_interval_s: Schema.optionalWith(Schema.Number.pipe(Schema.positive()), { default: () => 5 }),
  /** Claims a task may use (crashes included) before it fails with its refund. */
  max_attempts: Schema.optionalWith(PositiveInt, { default: () => 3 }),
  /** Retries of a generator's transient failure within one claim. */
  generate_retries: Schema.optionalWith(Schema.Int.pipe(Schema.nonNegative()), { default: () => 2 }),
  /** First retry delay; later ones double. */
  retry_base_ms: Schema.optionalWith(PositiveInt, { default: () => 500 })
}).pipe(
  Schema.filter((e) => e.heartbeat_s < e.lease_s || { path: ["heartbeat_s"], message: "must be shorter than lease_s" })
)
export type EngineSettings = typeof EngineSettings.Type

const Seconds = (fallback: number) =>
  Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 7 * 24 * 3600)), { default: () => fallback })

/** `limits.json` → `uploads`: URL lifetimes and the bounds of fetching a reference URL. */
export const UploadSettings = Schema.Struct({
  /** Lifetime of a session's pre-signed PUT URL. */
  session_url_ttl_s: Seconds(900),
  /** Lifetime of a confirmed upload's URL (the one placed in `reference_*`). */
  confirmed_url_ttl_s: Seconds(86_400),
  /** Lifetime of an image pre-upload URL (`/v1/image/uploads`). */
  image_url_ttl_s: Seconds(86_400),
  /** Time allowed to fetch one external reference URL, redirects included. */
  fetch_timeout_s: Seconds(60),
  /** Redirects followed when fetching a reference URL; each hop is checked like the first. */
  fetch_max_redirects: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 10)), { default: () => 3 }),
  /** How often each worker process looks for expired uploads to remove. */
  sweep_interval_s: Seconds(300),
  /** Uploads one sweep claims at a time; a sweep goes on while full batches come back. */
  sweep_batch: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 10_000)), { default: () => 100 }),
  /**
   * How long after its URL expired an upload is kept: room for a PUT or a
   * task creation that began just before the expiry to finish.
   */
  sweep_grace_s: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 86_400)), { default: () => 60 })
})
export type UploadSettings = typeof UploadSettings.Type

/** `limits.json` → `retention`: the sweeper of results past their group's retention and of requests to redact. */
export const RetentionSettings = Schema.Struct({
  /** How often each worker process looks for results to sweep and requests to redact. */
  sweep_interval_s: Seconds(300),
  /** Results or tasks one sweep claims at a time; a sweep goes on while full batches come back. */
  sweep_batch: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 10_000)), { default: () => 100 }),
  /**
   * A redacting group's ended task waits for its webhook events to go out
   * (they carry its metadata) at most this long; then it is redacted anyway
   * and an event still waiting goes with `metadata: {}`.
   */
  redact_wait_s: Seconds(86_400)
})
export type RetentionSettings = typeof RetentionSettings.Type

/**
 * `limits.json` → `storage`: how the engine rides out an object store that is
 * away (docs/engine.md). A result that exists is stored again with backoff,
 * holding no worker, for up to `outage_grace_s` from its first failure.
 */
export const StorageSettings = Schema.Struct({
  /** How long a finished result waits for object storage to come back before its task fails with the refund. */
  outage_grace_s: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 7 * 24 * 3600)), { default: () => 900 }),
  /**
   * Room for results that exist only in this service (sandbox renders,
   * synchronous upstream answers) while they wait, in `DATA_DIR/spool`;
   * a result that would not fit fails its task with the refund.
   */
  spool_max_bytes: Schema.optionalWith(Schema.Int.pipe(Schema.nonNegative()), {
    default: () => 2 * 1024 * 1024 * 1024
  }),
  /** The longest a single call to object storage may take before it counts as unreachable (a blackholed store). */
  request_timeout_s: Schema.optionalWith(Schema.Number.pipe(Schema.positive()), { default: () => 10 })
})
export type StorageSettings = typeof StorageSettings.Type

export const LimitsFile = Schema.Struct({
  body: Schema.Struct({
    /** Largest JSON request body, in bytes. */
    json_bytes: PositiveInt,
    /** Time allowed to receive a body the service reads itself (408 after it). */
    read_timeout_s: Schema.optionalWith(Schema.Number.pipe(Schema.positive()), { default: () => 30 }),
    /**
     * Largest body that carries files (the multipart and base64 image
     * uploads and edits), which is held in memory while it is checked: it
     * bounds what one request can make the service hold, whatever the
     * per-file limits add up to (413 past it).
     */
    upload_bytes: Schema.optionalWith(PositiveInt, { default: () => 128 * 1024 * 1024 })
  }),
  rate_limits: Schema.Struct({
    create: RateLimit,
    read: RateLimit,
    upload: RateLimit
  }),
  /** Seconds a caller is told to wait between polls of a task. */
  poll_interval_s: PositiveInt,
  /**
   * How long `POST /v1/images/generations` and `/v1/images/edits` wait for
   * their task before answering 202 with it (the task keeps running).
   */
  sync_wait_s: Schema.optionalWith(Schema.Number.pipe(Schema.positive()), { default: () => 120 }),
  /** Live status streams (`GET …/tasks/{id}/events`) one key may hold open on a replica at once (429 past it). */
  streams_per_key: Schema.optionalWith(PositiveInt, { default: () => 20 }),
  /** Seconds between the `: keep-alive` comments of a quiet live status stream. */
  stream_keep_alive_s: Schema.optionalWith(Schema.Number.pipe(Schema.positive()), { default: () => 15 }),
  /**
   * Seconds a live status stream may wait on a client that takes nothing
   * (its socket full, the response's buffer at its mark) before it is dropped.
   */
  stream_stall_s: Schema.optionalWith(Schema.Number.pipe(Schema.positive()), { default: () => 60 }),
  engine: Schema.optionalWith(EngineSettings, { default: () => Schema.decodeSync(EngineSettings)({}) }),
  /** Upload URL lifetimes and reference fetching (UploadSettings above). */
  uploads: Schema.optionalWith(UploadSettings, { default: () => Schema.decodeSync(UploadSettings)({}) }),
  /** Riding out an object store that is away (StorageSettings above). */
  storage: Schema.optionalWith(StorageSettings, { default: () => Schema.decodeSync(StorageSettings)({}) }),
  /** Sweeping expired results and redacting ended requests (RetentionSettings above). */
  retention: Schema.optionalWith(RetentionSettings, { default: () => Schema.decodeSync(RetentionSettings)({}) })
})
export type LimitsFile = typeof LimitsFile.Type

const GroupName = Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9_-]{0,63}$/))

/**
 * What a group sets for its accounts' share of the channels (docs/engine.md,
 * Fair share between accounts): its `weight` against other groups when a
 * channel chooses whose task to start next (default 1), the most tasks one
 * account may have in flight on one channel, and the most it may have
 * queued over all channels (past it a create answers 429). No limit when
 * left out.
 */
const Capacity = {
  weight: Schema.optional(Schema.Number.pipe(Schema.positive(), Schema.finite())),
  max_in_flight_per_channel: Schema.optional(Schema.Int.pipe(Schema.positive())),
  max_queued: Schema.optional(Schema.Int.pipe(Schema.positive()))
}

/**
 * How long a group's data is kept (docs/operating.md, Retention, Data
 * minimisation): result files are swept `result_retention_days` after they
 * were made (kept for ever when left out); with `redact_requests` a task's
 * prompt, references and metadata are kept only while it runs.
 */
const Keeping = {
  result_retention_days: Schema.optional(Schema.Number.pipe(Schema.positive(), Schema.finite())),
  redact_requests: Schema.optional(Schema.Boolean)
}

export const PlainGroup = Schema.Struct({
  multiplier: NonNegative,
  description: Schema.optional(Schema.String),
  ...Capacity,
  ...Keeping
})

/** A group that stands for others: its multiplier is resolved from its members. */
export const AggregateGroup = Schema.Struct({
  members: Schema.NonEmptyArray(GroupName),
  description: Schema.optional(Schema.String),
  ...Capacity,
  ...Keeping
})

export const GroupsFile = Schema.Struct({
  default_group: GroupName,
  groups: Schema.Record({ key: GroupName, value: Schema.Union(PlainGroup, AggregateGroup) })
}).pipe(
  Schema.filter((file) => {
    if (!(file.default_group in file.groups)) {
      return { path: ["default_group"], message: `"${file.default_group}" is not a key of "groups"` }
    }
    for (const [name, group] of Object.entries(file.groups)) {
      if ("members" in group) {
        const missing = group.members.find((m) => !(m in file.groups) || "members" in file.groups[m]!)
        if (missing !== undefined) {
          return { path: ["groups", name, "members"], message: `"${missing}" is not a plain group of "groups"` }
        }
      }
    }
    return undefined
  })
)
export type GroupsFile = typeof GroupsFile.Type

/** A built-in folder name, or a `./`/`../` path from the config directory (see Extensions.ts). */
const ExtensionRef = Schema.String.pipe(Schema.pattern(/^(?:[A-Za-z0-9_-]{1,64}|\.\.?\/.+)$/))
const ChannelName = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$/))

/**
 * Configs written before channels had one built-in channel, `sandbox`: an
 * entry of that name without `adapter` is the sandbox adapter, and a model
 * that names no channel runs there when it is configured.
 */
export const LEGACY_CHANNEL = "sandbox"

/**
 * The units a provider bills by (docs/configuration.md, Routes: cost): seconds
 * of video, images, tokens, or whole tasks. The adapter contract reports usage
 * in the same units (channel/contract/Usage.ts).
 */
export const CostUnit = Schema.Literal("second", "image", "token", "task")
export type CostUnit = typeof CostUnit.Type

/**
 * What a route's provider bills per unit, in the operator's own money (kept,
 * as credits are, in micro-units): for operators only, never shown to callers
 * and never part of a price. Units the route's kind cannot have are refused
 * at boot (catalog/RouteChecks.ts).
 */
export const RouteCost = Schema.Struct({ unit: CostUnit, price: NonNegative })
export type RouteCost = typeof RouteCost.Type

/** A model's channel: a bare name (the upstream knows the public id) or the name with the upstream's id. */
export const ModelChannel = Schema.Union(
  ChannelName,
  Schema.Struct({
    channel: ChannelName,
    upstream_model: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
    /** Video models: what this channel takes where it is narrower than the family's table (catalog/Narrower.ts). */
    narrower: Schema.optional(Schema.Unknown),
    /** What the provider bills for a task sent this way (operators only). */
    cost: Schema.optional(RouteCost)
  })
)

/** A day (`2027-03-01`) or an instant (`2027-03-01T00:00:00Z`), read as a Unix time in seconds (UTC). */
const WhenSeconds = Schema.transformOrFail(Schema.String, Schema.Number, {
  strict: true,
  decode: (text, _, ast) => {
    const ms = /^\d{4}-\d{2}-\d{2}$/.test(text) ? Date.parse(`${text}T00:00:00Z`) : Date.parse(text)
    return Number.isFinite(ms) && /^\d{4}-\d{2}-\d{2}/.test(text)
      ? ParseResult.succeed(Math.floor(ms / 1000))
      : ParseResult.fail(new ParseResult.Type(ast, text, "a date (2027-03-01) or an ISO 8601 instant"))
  },
  encode: (seconds) => ParseResult.succeed(new Date(seconds * 1000).toISOString())
})

/**
 * A model on its way out (docs/api.md, Model lifecycle): deprecated `since`
 * a date, served until `sunset`, after which its creates are refused naming
 * `successor`.
 */
export const Deprecation = Schema.Struct({
  since: WhenSeconds,
  sunset: WhenSeconds,
  successor: Schema.optional(Schema.String.pipe(Schema.minLength(1)))
}).pipe(Schema.filter((d) => d.sunset > d.since || { path: ["sunset"], message: "must be after \"since\"" }))
export type Deprecation = typeof Deprecation.Type

export const ModelSettings = Schema.Struct({
  /** Off hides the model from `/v1/models` and refuses it with `unsupported_*_model`. */
  enabled: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  /** On its way out: creates carry Deprecation, Sunset and Link headers, and are refused after the sunset. */
  deprecated: Schema.optional(Deprecation),
  /** Credits per second of requested video, before the group multiplier (video models). */
  price_per_second: Schema.optional(NonNegative),
  /** Credits per output image, before the group multiplier (image models). */
  price_per_image: Schema.optional(NonNegative),
  /** Pricing policy: whether the subscription balance may pay; otherwise only the wallet. */
  subscription: Schema.Boolean,
  /** Where generation runs, in failover order; a task runs on the first. */
  channels: Schema.optional(Schema.NonEmptyArray(ModelChannel)),
  /** Older configs: `generator: "x"` means `channels: ["x"]`. */
  generator: Schema.optional(ChannelName)
}).pipe(Schema.filter((m) =>
  m.channels !== undefined && m.generator !== undefined
    ? { path: ["generator"], message: `give "channels" or the older "generator", not both` }
    : undefined
))
export type ModelSettings = typeof ModelSettings.Type

/** Where a model runs: a configured channel and the model id its upstream knows. */
export interface ModelRoute {
  readonly channel: string
  readonly upstreamModel: string
  /** As written; the catalog reads it against the model's table at boot. */
  readonly narrower?: unknown
  /** What the provider bills per unit for a task sent this way, when the route declares it. */
  readonly cost?: RouteCost | undefined
}

/** A model's channels in order, with the older forms and the default resolved. */
export const modelRoutes = (
  id: string,
  model: ModelSettings,
  channels: Readonly<Record<string, unknown>>
): Array<ModelRoute> => {
  const named = model.channels ?? (model.generator !== undefined ? [model.generator] : undefined)
  if (named === undefined) return LEGACY_CHANNEL in channels ? [{ channel: LEGACY_CHANNEL, upstreamModel: id }] : []
  return named.map((c) =>
    typeof c === "string"
      ? { channel: c, upstreamModel: id }
      : { channel: c.channel, upstreamModel: c.upstream_model ?? id, narrower: c.narrower, cost: c.cost }
  )
}

/**
 * One channel's settings as written: `adapter` and the rest. The entry is
 * checked at boot against the common settings merged with its adapter's own
 * Schema (src/channel/Channels.ts), which only the loaded adapter knows.
 */
export const ChannelEntry = Schema.Record({ key: Schema.String, value: Schema.Unknown })

export const ModelsFile = Schema.Struct({
  /** Family plugins to load: folders of `plugins/`, or paths relative to the config directory. */
  plugins: Schema.Array(ExtensionRef),
  /** Configured channels by name; without the key, the one legacy sandbox channel. */
  channels: Schema.optionalWith(Schema.Record({ key: ChannelName, value: ChannelEntry }), {
    default: () => ({ [LEGACY_CHANNEL]: {} })
  }),
  models: Schema.Record({ key: Schema.String, value: ModelSettings }),
  /** Public model ids that name another model (a rename breaks no caller): alias → the model's id. */
  aliases: Schema.optionalWith(Schema.Record({ key: Schema.String, value: Schema.String }), { default: () => ({}) })
}).pipe(Schema.filter((file) => {
  for (const [alias, target] of Object.entries(file.aliases)) {
    if (alias in file.models) return { path: ["aliases", alias], message: "is a model's own id" }
    if (!(target in file.models)) return { path: ["aliases", alias], message: `names "${target}", which is no model` }
  }
  for (const [id, model] of Object.entries(file.models)) {
    const successor = model.deprecated?.successor
    if (successor !== undefined && !(successor in file.models) && !(successor in file.aliases)) {
      return { path: ["models", id, "deprecated", "successor"], message: `"${successor}" is no model` }
    }
  }
  for (const [id, model] of Object.entries(file.models)) {
    const routes = modelRoutes(id, model, file.channels)
    const field = model.generator !== undefined ? "generator" : "channels"
    if (routes.length === 0) {
      return {
        path: ["models", id, "channels"],
        message: `names no channel, and there is no "${LEGACY_CHANNEL}" channel to default to`
      }
    }
    const unknown = routes.find((r) => !(r.channel in file.channels))
    if (unknown !== undefined) {
      return { path: ["models", id, field], message: `unknown channel "${unknown.channel}" (not a key of "channels")` }
    }
    const names = routes.map((r) => r.channel)
    if (new Set(names).size !== names.length) return { path: ["models", id, field], message: "names a channel twice" }
  }
  return undefined
}))
export type ModelsFile = typeof ModelsFile.Type
