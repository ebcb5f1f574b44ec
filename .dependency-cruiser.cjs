/**
 * Who may import whom (docs/architecture.md, "Arrows"), checked by
 * dependency-cruiser in `npm run lint` over `src/`, `channels/` and
 * `plugins/`, on the resolved paths of every import (type-only ones
 * included). test/service/lint-rules.test.ts plants a violation of each rule and
 * checks it is caught.
 *
 * The feature folders form a layered graph, written out below as the
 * imports each folder is `allowed`: anything not listed is refused, so the
 * folders cannot form a cycle, and no file may take part in one either.
 * What the runtime-neutral core must not touch (Node's modules, `pg`) and
 * what adapters and plugins may see (their contract and `platform/` only)
 * are `forbidden` rules of their own, with their own names in the report.
 */

/** A folder of src/ (a feature, or a sub-folder named on its own below), as a path pattern. */
const f = (folder) => `^src/${folder}/`

/** The folders of src/ each folder may import besides itself. */
const LAYERS = {
  "platform/http": ["platform"],
  platform: ["migrations"],
  migrations: [],
  media: ["platform"],
  billing: ["platform"],
  storage: ["platform", "platform/http"],
  "catalog/contract": [],
  "channel/contract": ["catalog/contract", "media", "platform"],
  channel: ["channel/contract", "catalog/contract", "platform"],
  catalog: ["catalog/contract", "channel", "channel/contract", "accounts", "billing", "platform", "platform/http"],
  accounts: ["billing", "platform", "platform/http"],
  webhooks: ["accounts", "billing", "platform", "platform/http"],
  uploads: ["accounts", "catalog", "catalog/contract", "media", "storage", "platform", "platform/http"],
  tasks: [
    "accounts",
    "billing",
    "catalog",
    "catalog/contract",
    "channel",
    "channel/contract",
    "media",
    "storage",
    "uploads",
    "webhooks",
    "platform",
    "platform/http"
  ],
  "tasks/engine": [
    "assets",
    "tasks",
    "billing",
    "catalog",
    "catalog/contract",
    "channel",
    "channel/contract",
    "webhooks",
    "media",
    "storage",
    "platform"
  ],
  assets: ["accounts", "storage", "tasks", "platform", "platform/http"],
  images: ["assets", "accounts", "catalog", "storage", "tasks", "uploads", "platform", "platform/http"],
  callbacks: ["channel", "channel/contract", "tasks", "tasks/engine", "platform", "platform/http"],
  usage: ["accounts", "billing", "platform", "platform/http"],
  retention: ["channel", "channel/contract", "storage", "uploads", "platform"],
  console: [
    "assets",
    "accounts",
    "billing",
    "catalog",
    "channel",
    "ops",
    "storage",
    "tasks",
    "uploads",
    "usage",
    "webhooks",
    "platform",
    "platform/http"
  ],
  ops: [
    "accounts",
    "catalog",
    "channel",
    "channel/contract",
    "storage",
    "tasks/engine",
    "webhooks",
    "platform",
    "platform/http"
  ],
  client: [
    "assets",
    "catalog",
    "catalog/contract",
    "media",
    "tasks",
    "uploads",
    "platform",
    "platform/http",
    "runtime/node"
  ],
  cli: ["client", "media", "tasks", "runtime/node"]
}

/** The composed contract and the composition: the handlers import the former, nothing but entries the latter. */
const CONTRACT = "^src/(Api|ClientApi)\\.ts$"

module.exports = {
  forbidden: [
    {
      name: "no-cycle",
      comment: "No file takes part in an import cycle (type-only imports count: they tie the modules' meaning).",
      severity: "error",
      from: {},
      to: { circular: true }
    },
    {
      name: "adapters-see-their-contract",
      comment:
        "An adapter imports its own folder, the adapter contract (src/channel/contract/) and platform/ only: the core loads adapters by name and never the reverse.",
      severity: "error",
      from: { path: "^channels/([^/]+)/" },
      to: {
        path: "^(src/|channels/|plugins/)",
        pathNot: ["^channels/$1/", "^src/channel/contract/", "^src/platform/"]
      }
    },
    {
      name: "plugins-see-their-contract",
      comment: "A family plugin imports its own folder and the plugin contract (src/catalog/contract/) only.",
      severity: "error",
      from: { path: "^plugins/([^/]+)/" },
      to: { path: "^(src/|channels/|plugins/)", pathNot: ["^plugins/$1/", "^src/catalog/contract/"] }
    },
    {
      name: "core-names-no-extension",
      comment: "src/ never imports a plugin or an adapter: both are loaded by name from config.",
      severity: "error",
      from: { path: "^src/" },
      to: { path: "^(channels|plugins)/" }
    },
    {
      name: "node-only-in-runtime",
      comment:
        "Node's modules and pg only in the runtime layer and the Node entry points, so the core runs on Deno too.",
      severity: "error",
      from: { path: "^(src|channels|plugins)/", pathNot: ["^src/runtime/", "^src/main\\.ts$", "^src/cli/main\\.ts$"] },
      to: { dependencyTypes: ["core"] }
    },
    {
      name: "node-only-in-runtime",
      comment: "pg is Node's PostgreSQL driver: only the runtime layer uses it (the core speaks @effect/sql).",
      severity: "error",
      from: { path: "^(src|channels|plugins)/", pathNot: ["^src/runtime/", "^src/main\\.ts$"] },
      to: { path: "(^|/)node_modules/pg/" }
    },
    {
      name: "tasks-not-into-engine",
      comment:
        "The engine runs what the tasks feature stored; the tasks feature (create, query, store) does not reach into the engine.",
      severity: "error",
      from: { path: "^src/tasks/", pathNot: "^src/tasks/engine/" },
      to: { path: "^src/tasks/engine/" }
    },
    {
      name: "http-errors-in-handlers",
      comment:
        "Only platform/http and the handlers (*Http.ts) turn errors into answers; services raise their features' errors.",
      severity: "error",
      from: { path: "^src/", pathNot: ["^src/platform/http/", "Http\\.ts$", "^src/runtime/"] },
      to: { path: "^src/platform/http/(Errors|HttpFailure)\\.ts$" }
    },
    {
      name: "error-contract-in-contracts",
      comment:
        "The per-endpoint error contract belongs to the contract modules (*Api.ts) and the auth middleware tags.",
      severity: "error",
      from: {
        path: "^src/",
        pathNot: ["^src/platform/http/", "Api\\.ts$", "^src/accounts/Security\\.ts$", "^src/runtime/", "^src/client/"]
      },
      to: { path: "^src/platform/http/ErrorContract\\.ts$" }
    }
  ],
  allowed: [
    {
      comment: "packages",
      from: {},
      to: { dependencyTypes: ["npm", "npm-dev", "npm-optional", "npm-peer", "npm-no-pkg", "npm-unknown", "core"] }
    },
    {
      comment: "within a folder",
      from: { path: "^(src/[^/]+(/contract|/engine|/http|/node|/deno)?)/" },
      to: { path: "^$1/" }
    },
    { comment: "within an adapter or a plugin", from: { path: "^((channels|plugins)/[^/]+)/" }, to: { path: "^$1/" } },
    {
      comment: "adapters: their contract and platform",
      from: { path: "^channels/" },
      to: { path: "^src/(channel/contract|platform)/" }
    },
    { comment: "plugins: their contract", from: { path: "^plugins/" }, to: { path: "^src/catalog/contract/" } },
    ...Object.entries(LAYERS).flatMap(([folder, allowed]) =>
      allowed.map((to) => ({
        comment: `${folder} -> ${to}`,
        from: { path: f(folder), pathNot: Object.keys(LAYERS).filter((o) => o.startsWith(`${folder}/`)).map(f) },
        to: { path: f(to), pathNot: Object.keys(LAYERS).filter((o) => o.startsWith(`${to}/`)).map(f) }
      }))
    ),
    {
      comment: "handlers import the composed contract",
      from: { path: "Http\\.ts$|^src/(accounts/Auth|console/ConsoleAuth)\\.ts$" },
      to: { path: CONTRACT }
    },
    {
      comment: "the composed contract imports each feature's contract",
      from: { path: CONTRACT },
      to: { path: "^src/" }
    },
    {
      comment: "the composition and the runtime entries import anything of src/",
      from: { path: "^src/(Gateway|main|ServiceArgs)\\.ts$|^src/runtime/|^src/cli/main\\.ts$" },
      to: { path: "^src/" }
    },
    {
      comment: "the client speaks the composed contract",
      from: { path: "^src/(client|cli)/" },
      to: { path: CONTRACT }
    },
    { comment: "the package's version", from: { path: "^src/" }, to: { path: "^package\\.json$" } }
  ],
  allowedSeverity: "error",
  options: {
    doNotFollow: { path: "node_modules" },
    // A family's or an adapter's own tests (`*.test.ts` in its folder) use the test support, as test/ does.
    exclude: { path: ["^(dist|node_modules|test|bench|console)/", "\\.test\\.ts$"] },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.json" },
    enhancedResolveOptions: { extensions: [".ts", ".js", ".mjs"] }
  }
}
