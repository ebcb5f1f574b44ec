import pkg from "../package.json" with { type: "json" }

/**
 * The service's command line. It is configured by the environment and the
 * files of CONFIG_DIR and takes no arguments; `--help` and `--version` are
 * answered without starting anything (no database, no port), and anything
 * else is a usage error. Runtime-neutral: each entry point (src/main.ts,
 * src/runtime/deno/main.ts) prints the answer and sets the exit code.
 */

/** What to do: start the service, or print and exit with `code`. */
export type ServiceArgs =
  | { readonly _tag: "Start" }
  | { readonly _tag: "Exit"; readonly code: 0 | 2; readonly stdout?: string; readonly stderr?: string }

/** The usage text; `command` is how this runtime starts the service. The defaults are AppConfig.ts's. */
export const serviceUsage = (command: string) =>
  `Usage: ${command} [--help | --version]

Media task gateway ${pkg.version}: serves the HTTP API (ROLE=api or all) and runs the task engine
(ROLE=worker or all). It takes no arguments: it is configured by environment variables and by the
JSON files limits.json, groups.json and models.json in CONFIG_DIR, checked at start.

Environment (default):
  HOST, PORT             Listen address (127.0.0.1, 8080)
  OPS_PORT               A worker's port for /healthz, /readyz and /metrics (unset: none)
  PUBLIC_BASE_URL        Base of the URLs the service hands out (http://HOST:PORT)
  DATA_DIR               Embedded database, local object store, generated secrets (./data)
  CONFIG_DIR             Directory of the JSON configuration files (./config)
  DATABASE_URL           PostgreSQL instead of the embedded PGlite (unset)
  ROLE                   api, worker or all (all)
  ADMIN_TOKEN            Bearer token of the admin API (generated, in DATA_DIR/admin-token)
  METRICS_TOKEN          Bearer token of /metrics, beside ADMIN_TOKEN (unset)
  ENCRYPTION_KEY         Key for secrets at rest; the same on every replica (generated)
  STORAGE_SIGNING_KEY    Key of the local object store's URLs; the same on every replica (generated)
  S3_ENDPOINT, S3_BUCKET, S3_REGION, S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY
                         S3 object storage instead of the local store (unset; region us-east-1)
  WEBHOOK_MAX_ATTEMPTS, WEBHOOK_RETRY_INTERVAL_S, WEBHOOK_TIMEOUT_S, WEBHOOK_DISABLE_AFTER_S
                         Webhook delivery (3, 30, 10; disabled after 259200 s of failures)
  ALLOW_PRIVATE_TARGETS  Allow webhook and media URLs on non-public addresses (false)
  FFMPEG_PATH, FFPROBE_PATH
                         ffmpeg and ffprobe (the bundled static binaries)
  OTEL_EXPORTER_OTLP_ENDPOINT
                         Export traces and metrics over OTLP/HTTP (unset)

Options:
  -h, --help             Print this help and exit
  --version              Print the version and exit

Documentation: README.md and docs/ of the media-task-gateway package; a running service serves
its API reference at /docs and /openapi.json.
`

/** Reads the service's arguments (`process.argv.slice(2)`, `Deno.args`). */
export const serviceArgs = (args: ReadonlyArray<string>, command: string): ServiceArgs => {
  if (args.length === 0) return { _tag: "Start" }
  const unknown = args.find((a) => a !== "--help" && a !== "-h" && a !== "--version")
  if (unknown !== undefined) {
    return { _tag: "Exit", code: 2, stderr: `error: unknown argument: ${unknown}\n\n${serviceUsage(command)}` }
  }
  return args.includes("--help") || args.includes("-h")
    ? { _tag: "Exit", code: 0, stdout: serviceUsage(command) }
    : { _tag: "Exit", code: 0, stdout: `${pkg.version}\n` }
}
