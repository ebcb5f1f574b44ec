import { Schema } from "effect"
import { UploadSettings } from "./Upload.ts"

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

/** The task engine's timing (DESIGN.md, Task engine). */
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
}).pipe(Schema.filter((e) => e.heartbeat_s < e.lease_s || { path: ["heartbeat_s"], message: "must be shorter than lease_s" }))
export type EngineSettings = typeof EngineSettings.Type

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
  engine: Schema.optionalWith(EngineSettings, { default: () => Schema.decodeSync(EngineSettings)({}) }),
  /** Upload URL lifetimes and reference fetching (src/domain/Upload.ts). */
  uploads: Schema.optionalWith(UploadSettings, { default: () => Schema.decodeSync(UploadSettings)({}) })
})
export type LimitsFile = typeof LimitsFile.Type

const GroupName = Schema.String.pipe(Schema.pattern(/^[a-z0-9][a-z0-9_-]{0,63}$/))

export const PlainGroup = Schema.Struct({
  multiplier: NonNegative,
  description: Schema.optional(Schema.String)
})

/** A group that stands for others: its multiplier is resolved from its members. */
export const AggregateGroup = Schema.Struct({
  members: Schema.NonEmptyArray(GroupName),
  description: Schema.optional(Schema.String)
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

const PluginName = Schema.String.pipe(Schema.pattern(/^[A-Za-z0-9_-]{1,64}$/))

export const ModelSettings = Schema.Struct({
  /** Off hides the model from `/v1/models` and refuses it with `unsupported_*_model`. */
  enabled: Schema.optionalWith(Schema.Boolean, { default: () => true }),
  /** Credits per second of requested video, before the group multiplier (video models). */
  price_per_second: Schema.optional(NonNegative),
  /** Credits per output image, before the group multiplier (image models). */
  price_per_image: Schema.optional(NonNegative),
  /** Pricing policy: whether the subscription balance may pay; otherwise only the wallet. */
  subscription: Schema.Boolean,
  /**
   * Where generation runs. `sandbox` renders media locally and accepts the
   * `provider_options.sandbox` test switch; upstream channels come later.
   */
  generator: Schema.optionalWith(Schema.Literal("sandbox"), { default: () => "sandbox" as const })
})
export type ModelSettings = typeof ModelSettings.Type

/** Where generation runs, named by a model's `generator`. */
export const ChannelSettings = Schema.Struct({
  /** Tasks of this channel one worker process runs at once. */
  concurrency: Schema.optionalWith(PositiveInt, { default: () => 2 }),
  /**
   * How results are downloaded: `none` gives a signed, expiring URL;
   * `resource_api_key` a stable URL that needs the owning account's `ak_` key.
   */
  url_auth: Schema.optionalWith(Schema.Literal("none", "resource_api_key"), { default: () => "none" as const }),
  /** Lifetime of a signed result URL. */
  result_url_ttl_s: Schema.optionalWith(PositiveInt, { default: () => 86_400 })
})
export type ChannelSettings = typeof ChannelSettings.Type

export const ModelsFile = Schema.Struct({
  /** Folders of `plugins/` to load. */
  plugins: Schema.Array(PluginName),
  channels: Schema.optionalWith(Schema.Record({ key: Schema.Literal("sandbox"), value: ChannelSettings }), {
    default: () => ({ sandbox: Schema.decodeSync(ChannelSettings)({}) })
  }),
  models: Schema.Record({ key: Schema.String, value: ModelSettings })
})
export type ModelsFile = typeof ModelsFile.Type
