// Compiles the service to JavaScript under dist/ (`npm run build`; `prepare`
// runs it, so `npm install` and `npm ci` produce it). `npm start` runs
// dist/src/main.js with plain Node: no TypeScript loader at run time.
//
// One esbuild build with code splitting: the entry (src/main.ts), the `mtg`
// command-line tool (src/cli/main.ts, dist/src/cli/main.js) and every
// built-in plugin and channel adapter (plugins/*/index.ts, channels/*/index.ts,
// at the same places under dist/, where the service loads them by folder at
// run time), sharing chunks (dist/chunks/), so a plugin and the core share
// one copy of every module. `effect` and `@effect/*` are bundled in (their
// barrel imports alone cost seconds and tens of MiB when loaded module by
// module; bundled, only what is used is there); every other package stays an
// import from node_modules, and those the service loads only when configured
// (PGlite, the AWS SDK, OpenTelemetry's exporter) stay dynamic imports.
// esbuild only strips types: `npx tsc --noEmit` is the type check. Also made:
// dist/client, the typed client as a package export (see typedClient below), and
// dist/pglite, PGlite data directories: initdb's and a migrated template (see pgliteTemplate below).
import { build } from "esbuild"
import { spawn } from "node:child_process"
import { createHash } from "node:crypto"
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { dirname, join, relative, resolve, sep } from "node:path"
import { fileURLToPath, pathToFileURL } from "node:url"

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const OUT = join(ROOT, "dist")

const folders = (dir) =>
  readdirSync(join(ROOT, dir), { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(ROOT, dir, d.name, "index.ts")))
    .map((d) => `${dir}/${d.name}/index`)
// src/cli/main: `mtg` (bin/mtg.mjs imports it), compiled with the service so it starts without a TypeScript loader.
const entries = ["src/main", "src/cli/main", ...folders("plugins"), ...folders("channels")]

/** `effect` and `@effect/*` are bundled; every other package is imported from node_modules. */
const BUNDLED = /^(effect|@effect\/[^/]+)(\/|$)/
const packagesOutside = {
  name: "packages-outside",
  setup(b) {
    b.onResolve(
      { filter: /^[^./]/ },
      (args) =>
        BUNDLED.test(args.path) || args.path.startsWith("node:")
          ? undefined
          // None is imported for its side effects: an import whose names the bundle does not use goes.
          : { path: args.path, external: true, sideEffects: false }
    )
  }
}

/** The namespaces a package's index re-exports (`export * as Effect from "./Effect.js"`), by package. */
const namespaces = new Map()
const namespacesOf = (pkg) => {
  if (!namespaces.has(pkg)) {
    const index = readFileSync(join(ROOT, "node_modules", pkg, "dist", "esm", "index.js"), "utf8")
    namespaces.set(pkg, new Set([...index.matchAll(/^export \* as (\w+) from "\.\/(\w+)\.js"/gm)].map((m) => m[1])))
  }
  return namespaces.get(pkg)
}

/**
 * `import { Effect, Layer } from "effect"` becomes `import * as Effect from
 * "effect/Effect"` and so on, as Effect's own build tooling advises: through
 * the package's index, esbuild keeps every namespace whole (the object of all
 * its exports), so tree shaking drops nothing; from the module itself, only
 * what is used stays. Names that are not namespaces (`pipe`) stay imports of
 * the index; `type` names are left to esbuild, which removes them.
 */
const deepImports = (source) =>
  source.replace(/import\s*\{([^}]*)\}\s*from\s*"(effect|@effect\/[a-z-]+)"/g, (whole, names, pkg) => {
    const known = namespacesOf(pkg)
    const deep = []
    const rest = []
    for (const spec of names.split(",").map((n) => n.trim()).filter(Boolean)) {
      const [name, alias = name] = spec.split(/\s+as\s+/)
      if (!name.startsWith("type ") && known.has(name)) deep.push(`import * as ${alias} from "${pkg}/${name}"`)
      else rest.push(spec)
    }
    if (deep.length === 0) return whole
    return [...deep, ...(rest.length ? [`import { ${rest.join(", ")} } from "${pkg}"`] : [])].join("; ")
  })

/**
 * The repository's own modules: deep imports (above); and a module that
 * reads `import.meta.url` (to find plugins/, channels/, console/dist/
 * relative to itself) gets the URL it would have compiled on its own
 * (dist/src/catalog/Registry.js), whichever chunk its code ends up in:
 * every file of dist/ sits under the one `/dist/` folder.
 */
const ownSources = {
  name: "own-sources",
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, (args) => {
      const file = relative(ROOT, args.path)
      if (file.startsWith("..") || file.startsWith(`node_modules${sep}`)) return undefined
      let source = deepImports(readFileSync(args.path, "utf8"))
      if (source.includes("import.meta.url")) {
        const compiled = JSON.stringify(file.split(sep).join("/").replace(/\.ts$/, ".js"))
        const url = `(import.meta.url.slice(0, import.meta.url.lastIndexOf("/dist/") + 6) + ${compiled})`
        source = source.replaceAll("import.meta.url", url)
      }
      return { contents: source, loader: "ts" }
    })
  }
}

/**
 * `@effect/platform`'s index re-exports HttpApiScalar, which inlines Scalar's
 * 3.3 MB script; esbuild keeps it in the shared chunks every entry loads even
 * though only src/platform/http/Server.ts uses it, through a dynamic import
 * of `@effect/platform/HttpApiScalar` on the first request for /docs. The
 * index's re-export is left empty, so it is loaded only then.
 */
const scalarOnlyWhenAsked = {
  name: "scalar-only-when-asked",
  setup(b) {
    b.onResolve(
      { filter: /^\.\/HttpApiScalar\.js$/ },
      (args) =>
        /@effect[\\/]platform[\\/]dist[\\/]esm[\\/]index\.js$/.test(args.importer)
          ? { path: "HttpApiScalar", namespace: "left-empty" }
          : undefined
    )
    b.onLoad({ filter: /.*/, namespace: "left-empty" }, () => ({ contents: "export {}", loader: "js" }))
  }
}

/**
 * dist/pglite: PGlite data directories for the installed PGlite, made once
 * per PGlite version and set of migrations (dist/pglite/version says which).
 * - `initdb`: what PGlite's initdb makes (the tests' own empty databases).
 * - `template`: the same with the service's migrations applied, which
 *   src/platform/Database.ts copies into a fresh DATA_DIR instead of running
 *   initdb and every migration in WASM at a first start (seconds of CPU).
 * The migrations run through the service's own `migrate` (bundled from
 * scripts/pglite-template.ts for the occasion), so the template holds exactly
 * what a start would have made; a later migration is applied at start as on
 * any database.
 */
const pgliteTemplate = async () => {
  const dir = join(OUT, "pglite")
  const version = JSON.parse(readFileSync(join(ROOT, "node_modules/@electric-sql/pglite/package.json"), "utf8")).version
  const migrationsDir = join(ROOT, "src/migrations")
  const digest = createHash("sha256")
  for (const name of readdirSync(migrationsDir).sort()) {
    digest.update(name).update(readFileSync(join(migrationsDir, name)))
  }
  const stamp = `${version} ${digest.digest("hex").slice(0, 16)}`
  const stampFile = join(dir, "version")
  const made = ["initdb", "template"].every((d) => existsSync(join(dir, d, "PG_VERSION")))
  if (made && existsSync(stampFile) && readFileSync(stampFile, "utf8") === stamp) return
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir, { recursive: true })
  const { PGlite } = await import("@electric-sql/pglite")
  const db = new PGlite(join(dir, "initdb"))
  await db.waitReady
  await db.close()
  cpSync(join(dir, "initdb"), join(dir, "template"), { recursive: true })
  const runner = join(dir, `migrate-${process.pid}.mjs`)
  await build({
    absWorkingDir: ROOT,
    entryPoints: ["scripts/pglite-template.ts"],
    outfile: runner,
    bundle: true,
    plugins: [packagesOutside],
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "warning"
  })
  try {
    const applied = await (await import(pathToFileURL(runner).href)).migrateDataDir(join(dir, "template"))
    writeFileSync(stampFile, stamp)
    console.log(`made dist/pglite (PGlite ${version}: initdb, and a template with ${applied} migrations applied)`)
  } finally {
    rmSync(runner, { force: true })
  }
}

/** Every file under `dir`. */
const filesUnder = (dir) =>
  readdirSync(dir, { withFileTypes: true }).flatMap((d) =>
    d.isDirectory() ? filesUnder(join(dir, d.name)) : [join(dir, d.name)]
  )

/**
 * The typed client, `media-task-gateway/client` (package.json `exports`), for
 * callers' own programs on plain Node, without a TypeScript loader:
 * - dist/client/index.js: src/client/index.ts and the modules it reaches (the
 *   contract's schemas) in one ES module. Every package stays an import from
 *   node_modules (they are the package's dependencies), `effect` and
 *   `@effect/*` above all, unlike the service above: a caller's Effect program
 *   provides `GatewayClient.layer` and runs the client's effects with its own
 *   `effect`, so the client must use that one copy, not carry a second.
 * - dist/client/types/: the declarations, from `tsc -p tsconfig.client.json`
 *   (one .d.ts per source, at its path under src/; the index is
 *   dist/client/types/client/index.d.ts). tsc writes the sources' `./x.ts`
 *   specifiers as they are; they are rewritten to `./x.js`, which every
 *   `moduleResolution` (node16, nodenext, bundler) maps to `./x.d.ts`.
 *   TypeScript is a devDependency: where it is not installed (`--omit=dev`),
 *   the declarations are skipped with a warning; the service does not use them.
 * Answers `{ declarations }`, a promise of the tsc process, which runs while the rest builds.
 */
const typedClient = async () => {
  rmSync(join(OUT, "client"), { recursive: true, force: true })
  await build({
    absWorkingDir: ROOT,
    entryPoints: [{ in: "src/client/index.ts", out: "client/index" }],
    outdir: OUT,
    bundle: true,
    packages: "external",
    platform: "node",
    format: "esm",
    target: "node20",
    logLevel: "warning"
  })
  let tsc
  try {
    tsc = createRequire(join(ROOT, "package.json")).resolve("typescript/bin/tsc")
  } catch {
    console.warn("typescript is not installed: dist/client has no type declarations")
    return { declarations: Promise.resolve() }
  }
  const declarations = new Promise((done, fail) => {
    const child = spawn(process.execPath, [tsc, "-p", "tsconfig.client.json"], { cwd: ROOT, stdio: "inherit" })
    child.on("error", fail)
    child.on("close", (code) => {
      if (code !== 0) return fail(new Error(`tsc -p tsconfig.client.json exited with ${code}`))
      const types = join(OUT, "client", "types")
      for (const file of filesUnder(types).filter((f) => f.endsWith(".d.ts"))) {
        const text = readFileSync(file, "utf8")
        const rewritten = text.replace(/(["'])(\.{1,2}\/[^"']*?)\.ts\1/g, "$1$2.js$1")
        if (rewritten !== text) writeFileSync(file, rewritten)
      }
      done()
    })
  })
  // Awaited after the other builds; a failure is reported then, not as an unhandled rejection before.
  declarations.catch(() => {})
  return { declarations }
}

// The compiled modules are replaced; dist/pglite is kept while its PGlite version and migrations hold.
for (const part of ["src", "chunks", "plugins", "channels"]) rmSync(join(OUT, part), { recursive: true, force: true })
const { declarations } = await typedClient()
const result = await build({
  absWorkingDir: ROOT,
  entryPoints: entries.map((out) => ({ in: `${out}.ts`, out })),
  outdir: OUT,
  bundle: true,
  splitting: true,
  chunkNames: "chunks/[name]-[hash]",
  plugins: [packagesOutside, ownSources, scalarOnlyWhenAsked],
  platform: "node",
  format: "esm",
  target: "node20",
  // No `keepNames`: it wraps every closure Effect creates at run time in a
  // call that sets its `name` (a property definition per closure, on every
  // request), which cost 22 % of the server's CPU per authenticated read
  // (bench/RESULTS.md, read-path, 2026-11-24). Nothing here reads a function's
  // name: errors carry their tag as `name` (Schema.TaggedError sets it on the
  // prototype) and services are found by their tag's key.
  metafile: true,
  logLevel: "warning"
})
// `BUILD_META=file` keeps esbuild's metafile (what each output holds: `npx esbuild --analyze` reads it).
if (process.env.BUILD_META) writeFileSync(process.env.BUILD_META, JSON.stringify(result.metafile))
await pgliteTemplate()
await declarations
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0)
const client = statSync(join(OUT, "client", "index.js")).size
console.log(
  `built ${entries.length} entries into dist/ (${
    (bytes / 1024 / 1024).toFixed(1)
  } MiB) and the typed client (dist/client, ${Math.round(client / 1024)} KiB)`
)
