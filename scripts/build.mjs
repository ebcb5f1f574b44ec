// Compiles the service to JavaScript under dist/ (`npm run build`; `prepare`
// runs it, so `npm install` and `npm ci` produce it). `npm start` runs
// dist/src/main.js with plain Node: no TypeScript loader at run time.
//
// One esbuild build with code splitting: the entry (src/main.ts) and every
// built-in plugin and channel adapter (plugins/*/index.ts, channels/*/index.ts,
// at the same places under dist/, where the service loads them by folder at
// run time), sharing chunks (dist/chunks/), so a plugin and the core share
// one copy of every module. `effect` and `@effect/*` are bundled in (their
// barrel imports alone cost seconds and tens of MiB when loaded module by
// module; bundled, only what is used is there); every other package stays an
// import from node_modules, and those the service loads only when configured
// (PGlite, the AWS SDK, OpenTelemetry's exporter) stay dynamic imports.
// esbuild only strips types: `npx tsc --noEmit` is the type check.
import { build } from "esbuild"
import { existsSync, readdirSync, readFileSync, rmSync } from "node:fs"
import { dirname, join, relative, resolve, sep } from "node:path"
import { fileURLToPath } from "node:url"

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), "..")
const OUT = join(ROOT, "dist")

const folders = (dir) =>
  readdirSync(join(ROOT, dir), { withFileTypes: true })
    .filter((d) => d.isDirectory() && existsSync(join(ROOT, dir, d.name, "index.ts")))
    .map((d) => `${dir}/${d.name}/index`)
const entries = ["src/main", ...folders("plugins"), ...folders("channels")]

/** `effect` and `@effect/*` are bundled; every other package is imported from node_modules. */
const BUNDLED = /^(effect|@effect\/[^/]+)(\/|$)/
const packagesOutside = {
  name: "packages-outside",
  setup(b) {
    b.onResolve(
      { filter: /^[^./]/ },
      (args) =>
        BUNDLED.test(args.path) || args.path.startsWith("node:") ? undefined : { path: args.path, external: true }
    )
  }
}

/**
 * A module of this repository that reads `import.meta.url` (to find plugins/,
 * channels/, console/dist/ relative to itself) gets the URL it would have
 * compiled on its own (dist/src/catalog/Registry.js), whichever chunk its
 * code ends up in: every file of dist/ sits under the one `/dist/` folder.
 */
const ownUrl = {
  name: "own-url",
  setup(b) {
    b.onLoad({ filter: /\.ts$/ }, (args) => {
      const file = relative(ROOT, args.path)
      if (file.startsWith("..") || file.startsWith(`node_modules${sep}`)) return undefined
      const source = readFileSync(args.path, "utf8")
      if (!source.includes("import.meta.url")) return { contents: source, loader: "ts" }
      const compiled = JSON.stringify(file.split(sep).join("/").replace(/\.ts$/, ".js"))
      const url = `(import.meta.url.slice(0, import.meta.url.lastIndexOf("/dist/") + 6) + ${compiled})`
      return { contents: source.replaceAll("import.meta.url", url), loader: "ts" }
    })
  }
}

if (existsSync(OUT)) rmSync(OUT, { recursive: true, force: true })
const result = await build({
  absWorkingDir: ROOT,
  entryPoints: entries.map((out) => ({ in: `${out}.ts`, out })),
  outdir: OUT,
  bundle: true,
  splitting: true,
  chunkNames: "chunks/[name]-[hash]",
  plugins: [packagesOutside, ownUrl],
  platform: "node",
  format: "esm",
  target: "node20",
  // Class and function names show in logs and errors as they do from source.
  keepNames: true,
  metafile: true,
  logLevel: "warning"
})
const bytes = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0)
console.log(`built ${entries.length} entries into dist/ (${(bytes / 1024 / 1024).toFixed(1)} MiB)`)
