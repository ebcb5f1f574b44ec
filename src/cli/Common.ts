import { Options } from "@effect/cli"
import { Config, Console, Effect, Option, Schema } from "effect"
import { GatewayClient, type GatewayClientConfig } from "../client/Client.ts"

/** A command line that names something impossible (a missing key, bad JSON, a flag combination); exit code 2. */
export class UsageError extends Schema.TaggedError<UsageError>()("UsageError", { message: Schema.String }) {}

export const DEFAULT_BASE_URL = "http://127.0.0.1:8080"

/** The flag falls back to the environment variable `name`, and its help says so. */
const fromEnv = (name: string) => <A>(self: Options.Options<A>) =>
  self.pipe(Options.withFallbackConfig(Config.string(name)), Options.withDescription(`From ${name} when not given.`))

/** Options every command takes; the address and the keys fall back to the environment. */
export const common = {
  baseUrl: Options.text("base-url").pipe(
    Options.withPseudoName("URL"),
    Options.withDescription("The gateway's address."),
    fromEnv("MTG_BASE_URL"),
    Options.withDefault(DEFAULT_BASE_URL)
  ),
  modelToken: Options.text("model-token").pipe(
    Options.withPseudoName("TOKEN"),
    Options.withDescription("Model API token (sk-…), needed to create tasks."),
    fromEnv("MTG_MODEL_TOKEN"),
    Options.optional
  ),
  resourceKey: Options.text("resource-key").pipe(
    Options.withPseudoName("KEY"),
    Options.withDescription("Resource API key (ak_…), needed to upload, read and wait for tasks and to download."),
    fromEnv("MTG_RESOURCE_KEY"),
    Options.optional
  ),
  json: Options.boolean("json").pipe(
    Options.withDescription("Print one JSON document on stdout; progress goes to stderr as plain lines.")
  )
}

export interface Common {
  readonly baseUrl: string
  readonly modelToken: Option.Option<string>
  readonly resourceKey: Option.Option<string>
  readonly json: boolean
}

const KEYS = {
  model: "a model token: --model-token or MTG_MODEL_TOKEN",
  resource: "a resource key: --resource-key or MTG_RESOURCE_KEY"
} as const

/**
 * Runs `effect` with a client for these options; `needs` names the keys the
 * command cannot work without, which are a usage error when missing.
 */
export const withGateway =
  (options: Common, needs: ReadonlyArray<"model" | "resource">) => <A, E, R>(effect: Effect.Effect<A, E, R>) =>
    Effect.gen(function*() {
      const config: GatewayClientConfig = {
        baseUrl: options.baseUrl,
        modelToken: Option.getOrUndefined(options.modelToken),
        resourceKey: Option.getOrUndefined(options.resourceKey)
      }
      for (const need of needs) {
        if ((need === "model" ? config.modelToken : config.resourceKey) === undefined) {
          return yield* new UsageError({ message: `This command needs ${KEYS[need]}.` })
        }
      }
      if (!/^https?:\/\/[^/]/i.test(config.baseUrl)) {
        return yield* new UsageError({
          message: `--base-url must be an http(s) URL, not ${JSON.stringify(config.baseUrl)}.`
        })
      }
      return yield* Effect.provide(effect, GatewayClient.layer(config))
    })

/** A flag holding a JSON object (`--metadata`, `--provider-options`). */
export const jsonObject = (flag: string, value: Option.Option<string>) =>
  Effect.gen(function*() {
    if (Option.isNone(value)) return undefined
    const parsed = yield* Effect.try({
      try: () => JSON.parse(value.value) as unknown,
      catch: () => new UsageError({ message: `--${flag} must be a JSON object; it is not valid JSON.` })
    })
    if (typeof parsed !== "object" || parsed === null || Array.isArray(parsed)) {
      return yield* new UsageError({ message: `--${flag} must be a JSON object.` })
    }
    return parsed as Record<string, any>
  })

/** Prints `value` as JSON with `--json`, otherwise the human lines. */
export const output = (options: Pick<Common, "json">, value: unknown, human: () => ReadonlyArray<string>) =>
  Console.log(options.json ? JSON.stringify(value, null, 2) : human().join("\n"))
