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

export const ChannelSettings = Schema.Struct({
  /** The adapter this channel is an instance of: a folder of `channels/`, or `./`/`../` path from the config directory. */
  adapter: Schema.String,
  /** Tasks of this channel one worker process runs at once. */
  concurrency: Schema.optionalWith(PositiveInt, { default: () => 2 }),
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
  callbacks: Schema.optionalWith(Schema.Boolean, { default: () => false })
})
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
