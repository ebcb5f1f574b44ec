import { FileSystem, Path } from "@effect/platform"
import {
  Config,
  ConfigError,
  Context,
  Data,
  Effect,
  Either,
  Layer,
  Option,
  ParseResult,
  Redacted,
  Schema
} from "effect"
import { GroupsFile, LimitsFile, ModelsFile } from "./Settings.ts"

/** A start-up failure an operator can act on: names the file, field and problem. */
export class ConfigurationError extends Data.TaggedError("ConfigurationError")<{ readonly message: string }> {}

export type Role = "api" | "worker" | "all"

export interface Environment {
  readonly host: string
  readonly port: number
  /** Where a `ROLE=worker` replica answers `/healthz`, `/readyz` and `/metrics`; unset, it listens on nothing. */
  readonly opsPort: Option.Option<number>
  readonly publicBaseUrl: string
  readonly dataDir: string
  readonly configDir: string
  readonly databaseUrl: Option.Option<Redacted.Redacted>
  readonly adminToken: Option.Option<Redacted.Redacted>
  readonly metricsToken: Option.Option<Redacted.Redacted>
  readonly encryptionKey: Option.Option<Redacted.Redacted>
  readonly storageSigningKey: Option.Option<Redacted.Redacted>
  readonly role: Role
  readonly allowPrivateTargets: boolean
  readonly otlpEndpoint: Option.Option<string>
  readonly webhook: {
    readonly maxAttempts: number
    readonly retryIntervalS: number
    readonly timeoutS: number
    /** How long deliveries may fail without one success before the webhook is disabled. */
    readonly disableAfterS: number
  }
  readonly s3: Option.Option<{
    readonly endpoint: Option.Option<string>
    readonly bucket: string
    readonly region: string
    readonly accessKeyId: Option.Option<string>
    readonly secretAccessKey: Option.Option<Redacted.Redacted>
  }>
}

/** The service's environment variables (docs/operating.md, Environment variables), with their defaults. */
export const environmentConfig: Config.Config<Environment> = Config.all({
  host: Config.withDefault(Config.string("HOST"), "127.0.0.1"),
  port: Config.withDefault(Config.port("PORT"), 8080),
  opsPort: Config.option(Config.port("OPS_PORT")),
  publicBaseUrl: Config.option(Config.string("PUBLIC_BASE_URL")),
  dataDir: Config.withDefault(Config.string("DATA_DIR"), "./data"),
  configDir: Config.withDefault(Config.string("CONFIG_DIR"), "./config"),
  databaseUrl: Config.option(Config.redacted("DATABASE_URL")),
  adminToken: Config.option(Config.redacted("ADMIN_TOKEN")),
  metricsToken: Config.option(Config.redacted("METRICS_TOKEN")),
  encryptionKey: Config.option(Config.redacted("ENCRYPTION_KEY")),
  storageSigningKey: Config.option(Config.redacted("STORAGE_SIGNING_KEY")),
  role: Config.withDefault(Config.literal("api", "worker", "all")("ROLE"), "all" as const),
  allowPrivateTargets: Config.withDefault(Config.boolean("ALLOW_PRIVATE_TARGETS"), false),
  otlpEndpoint: Config.option(Config.string("OTEL_EXPORTER_OTLP_ENDPOINT")),
  webhook: Config.all({
    maxAttempts: Config.withDefault(Config.integer("WEBHOOK_MAX_ATTEMPTS"), 3).pipe(
      Config.validate({ message: "must be at least 1", validation: (n) => n >= 1 })
    ),
    retryIntervalS: Config.withDefault(Config.number("WEBHOOK_RETRY_INTERVAL_S"), 30).pipe(
      Config.validate({ message: "must not be negative", validation: (n) => n >= 0 })
    ),
    timeoutS: Config.withDefault(Config.number("WEBHOOK_TIMEOUT_S"), 10).pipe(
      Config.validate({ message: "must be positive", validation: (n) => n > 0 })
    ),
    disableAfterS: Config.withDefault(Config.number("WEBHOOK_DISABLE_AFTER_S"), 3 * 86_400).pipe(
      Config.validate({ message: "must be positive", validation: (n) => n > 0 })
    )
  }),
  s3: Config.option(Config.all({
    endpoint: Config.option(Config.string("S3_ENDPOINT")),
    bucket: Config.string("S3_BUCKET"),
    region: Config.withDefault(Config.string("S3_REGION"), "us-east-1"),
    accessKeyId: Config.option(Config.string("S3_ACCESS_KEY_ID")),
    secretAccessKey: Config.option(Config.redacted("S3_SECRET_ACCESS_KEY"))
  })),
  s3Endpoint: Config.option(Config.string("S3_ENDPOINT"))
}).pipe(
  Config.mapOrFail(({ s3Endpoint, ...env }) =>
    // Without a bucket the S3 block is absent and the local store would be used silently.
    Option.isSome(s3Endpoint) && Option.isNone(env.s3)
      ? Either.left(ConfigError.InvalidData(["S3_BUCKET"], "S3_ENDPOINT is set but S3_BUCKET is not"))
      : Either.right({
        ...env,
        publicBaseUrl: Option.getOrElse(
          env.publicBaseUrl,
          () => `http://${env.host.includes(":") ? `[${env.host}]` : env.host}:${env.port}`
        ).replace(/\/+$/, "")
      })
  )
)

/**
 * The port this process listens on: `PORT`, or a worker's `OPS_PORT` (a
 * worker serves no API, and several share a host with `PORT` left alone).
 * A worker without `OPS_PORT` builds no server, so its value is then unused.
 */
export const listenPort = (env: Pick<Environment, "role" | "port" | "opsPort">) =>
  env.role === "worker" ? Option.getOrElse(env.opsPort, () => env.port) : env.port

export interface Settings {
  readonly limits: LimitsFile
  readonly groups: GroupsFile
  readonly models: ModelsFile
}

/** Reads one JSON file of `config/` and checks it against its schema. */
const readConfigFile = <A, I>(dir: string, name: string, schema: Schema.Schema<A, I>) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const file = path.join(dir, name)
    const text = yield* fs.readFileString(file).pipe(
      Effect.mapError((e) => new ConfigurationError({ message: `${file}: cannot be read (${e.message})` }))
    )
    const json = yield* Effect.try({
      try: () => JSON.parse(text) as unknown,
      catch: (e) => new ConfigurationError({ message: `${file}: not valid JSON (${(e as Error).message})` })
    })
    return yield* Schema.decodeUnknown(schema, { onExcessProperty: "error", errors: "all" })(json).pipe(
      Effect.mapError((e) =>
        new ConfigurationError({
          message: `${file}: invalid configuration\n${
            ParseResult.ArrayFormatter.formatErrorSync(e)
              .map((issue) => `  at ${issue.path.length ? issue.path.join(".") : "(root)"}: ${issue.message}`)
              .join("\n")
          }`
        })
      )
    )
  })

export const loadSettings = (dir: string) =>
  Effect.all({
    limits: readConfigFile(dir, "limits.json", LimitsFile),
    groups: readConfigFile(dir, "groups.json", GroupsFile),
    models: readConfigFile(dir, "models.json", ModelsFile)
  })

/** The environment and the `config/` files, read and checked once at start. */
export class AppConfig extends Context.Tag("AppConfig")<AppConfig, Environment & Settings>() {
  static readonly layer = Layer.effect(
    AppConfig,
    Effect.gen(function*() {
      const env = yield* environmentConfig.pipe(
        Effect.mapError((e) => new ConfigurationError({ message: `environment: ${e}` }))
      )
      const settings = yield* loadSettings(env.configDir)
      return { ...env, ...settings }
    })
  )
}
