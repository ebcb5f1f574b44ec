import { Config, Effect, ParseResult, Redacted, Schema } from "effect"

/**
 * The settings every channel takes, whatever its adapter
 * (docs/adapters/README.md, Settings every channel takes). An adapter's own
 * settings Schema is merged with these at boot (Channels.ts), so one entry of
 * `config/models.json` → `channels` is checked as a whole and an unknown key is
 * refused.
 */

const PositiveInt = Schema.Int.pipe(Schema.positive())
const Seconds = (fallback: number) => Schema.optionalWith(PositiveInt, { default: () => fallback })

/** Time limits of the upstream exchanges; in-process adapters (the sandbox) have none to apply yet. */
export const ChannelTimeouts = Schema.Struct({
  /** One submit request, connection included. */
  submit_s: Seconds(60),
  /** One status request of a submitted task. */
  poll_s: Seconds(30),
  /** Downloading one result from the upstream before it is re-hosted. */
  download_s: Seconds(600),
  /** From the first submit to a result; past it the task fails with its refund. */
  deadline_s: Seconds(6 * 3600)
})
export type ChannelTimeouts = typeof ChannelTimeouts.Type

const PositiveRate = Schema.Number.pipe(Schema.finite(), Schema.positive())

/**
 * The channel's share of each upstream operation, where the provider limits
 * them apart (Replicate: creates and other calls), in requests per second;
 * each within the channel's `requests_per_second`. The channel check counts
 * with the reads (poll, find, cancel) and has no rate of its own.
 */
export const RequestsByOperation = Schema.Struct({
  submit: Schema.optional(PositiveRate),
  poll: Schema.optional(PositiveRate),
  find: Schema.optional(PositiveRate),
  cancel: Schema.optional(PositiveRate)
})
export type RequestsByOperation = typeof RequestsByOperation.Type

const ChannelFields = Schema.Struct({
  /** The adapter this channel is an instance of: a folder of `channels/`, or `./`/`../` path from the config directory. */
  adapter: Schema.String,
  /**
   * Tasks of this channel in flight at once (running here or waiting
   * upstream), over every replica together: an upstream account's cap.
   */
  concurrency: Schema.optionalWith(PositiveInt, { default: () => 2 }),
  /**
   * Whose queued task the channel starts next (docs/engine.md, Fair share
   * between accounts): `account` (the default), the account with the least
   * in flight here relative to its group's weight; `group`, the group so,
   * then its accounts equally; `fifo`, the oldest task whoever sent it.
   * Every mode keeps each account within its group's `max_in_flight_per_channel`.
   */
  fair_share: Schema.optionalWith(Schema.Literal("account", "group", "fifo"), {
    default: () => "account" as const
  }),
  /**
   * How results are downloaded: `none` gives a signed, expiring URL;
   * `resource_api_key` a stable URL that needs the owning account's `ak_` key.
   */
  url_auth: Schema.optionalWith(Schema.Literal("none", "resource_api_key"), { default: () => "none" as const }),
  /** Lifetime of a signed result URL. */
  result_url_ttl_s: Schema.optionalWith(PositiveInt, { default: () => 86_400 }),
  timeouts: Schema.optionalWith(ChannelTimeouts, {
    exact: true,
    default: () => Schema.decodeSync(ChannelTimeouts)({})
  }),
  /**
   * How long the channel is skipped (its tasks go straight to the model's
   * next channel) after it did not take a task: the circuit breaker's
   * cool-down. 0 turns the breaker off: every task tries the channel.
   */
  breaker_cooldown_s: Schema.optionalWith(Schema.Int.pipe(Schema.nonNegative()), { default: () => 60 }),
  /**
   * Ask the upstream to call back on status changes, at this channel's URL
   * under PUBLIC_BASE_URL (which the upstream must be able to reach). Only
   * for adapters that can (Callbacks.ts); a callback only hastens a poll.
   */
  callbacks: Schema.optionalWith(Schema.Boolean, { default: () => false }),
  /**
   * The upstream requests per second this channel may send, kept by every
   * replica together (channel/UpstreamBudget.ts): submits, polls (a batch
   * query is one), finds, cancels and the channel check; result downloads
   * do not count. Absent: no budget, each call goes out when the engine makes it.
   */
  requests_per_second: Schema.optional(PositiveRate),
  /** Narrower rates of single operations, each within `requests_per_second`. */
  requests_per_second_by_operation: Schema.optional(RequestsByOperation),
  /**
   * The share of `requests_per_second` that reads (polls, finds, cancels,
   * checks) leave to creates, so new work is never held behind polling.
   * Creates may use more when reads leave it free.
   */
  create_share: Schema.optional(Schema.Number.pipe(Schema.between(0, 0.9)))
})

/** Why a channel's request budget does not hold together, or undefined when it does. */
const budgetProblem = (settings: typeof ChannelFields.Type) => {
  const total = settings.requests_per_second
  const byOperation = settings.requests_per_second_by_operation ?? {}
  if (total === undefined) {
    if (settings.requests_per_second_by_operation !== undefined) {
      return { path: ["requests_per_second_by_operation"], message: "needs requests_per_second, the channel's total" }
    }
    if (settings.create_share !== undefined) {
      return { path: ["create_share"], message: "needs requests_per_second, the budget it is a share of" }
    }
    return undefined
  }
  for (const [operation, rate] of Object.entries(byOperation)) {
    if (rate !== undefined && rate > total) {
      return {
        path: ["requests_per_second_by_operation", operation],
        message: `${rate} is more than requests_per_second (${total}): each operation's rate is within the total`
      }
    }
  }
  return undefined
}

export const ChannelSettings = ChannelFields.pipe(
  Schema.filter((settings) => {
    const problem = budgetProblem(settings)
    return problem === undefined ? undefined : { path: problem.path, message: problem.message }
  })
)
export type ChannelSettings = typeof ChannelSettings.Type

/**
 * An adapter's `base_url`: an http(s) URL, one schema for every adapter,
 * read without its trailing slashes so that adapters join paths to it as
 * they are (`${base}/videos`), whichever way an operator wrote it.
 */
export const HttpUrl = Schema.transform(
  Schema.String.pipe(Schema.pattern(/^https?:\/\/[^\s]+$/, { message: () => "an http(s) URL" })),
  Schema.String,
  { strict: true, decode: (url) => url.replace(/\/+$/, ""), encode: (url) => url }
)

const EnvName = Schema.String.pipe(Schema.pattern(/^[A-Za-z_][A-Za-z0-9_]*$/))

/**
 * A secret in config: `{ "env": "NAME" }`, never the value itself, so config
 * files can be shared and committed. Decoding reads the variable through
 * Effect's ConfigProvider (the process environment, or a test's map), so an
 * unset or empty variable fails the boot with the field's path; the value is
 * kept Redacted so it never reaches a log.
 */
export const SecretFromEnv = Schema.transformOrFail(
  Schema.Struct({ env: EnvName }),
  Schema.RedactedFromSelf(Schema.String),
  {
    strict: true,
    decode: ({ env }, _, ast) =>
      Config.redacted(env).pipe(
        Effect.filterOrFail((value) => Redacted.value(value).length > 0, () => "empty"),
        Effect.mapError(() => new ParseResult.Type(ast, { env }, `environment variable ${env} is not set`))
      ),
    // A resolved secret is never written back out.
    encode: (value, _, ast) => ParseResult.fail(new ParseResult.Forbidden(ast, value, "secrets are not encoded"))
  }
)
export type SecretFromEnv = typeof SecretFromEnv.Type
