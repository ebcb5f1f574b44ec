import { execFileSync } from "node:child_process"
import { existsSync, readdirSync, statSync } from "node:fs"
import { join } from "node:path"

/**
 * vitest's global setup: compiles the service, the `mtg` tool and the typed
 * client (`npm run build`: esbuild, and tsc for the client's declarations, a
 * few seconds) before the tests run when a source is
 * newer than the last build or an entry is missing, so the process-level
 * tests start what `npm start` runs and the CLI tests run what `npx mtg`
 * runs, built from the sources under test, never a stale dist/. An
 * up-to-date dist/ is left alone, so a service another run started from it
 * keeps its files.
 */
// package.json: the CLI's `--version` is compiled in.
const SOURCES = ["src", "plugins", "channels", "scripts", "package.json", "package-lock.json"]
/** One build writes every entry; each must be there, and the oldest must be newer than every source. */
const ENTRIES = [
  "dist/src/main.js",
  "dist/src/cli/main.js",
  "dist/client/index.js",
  "dist/client/types/client/index.d.ts",
  "dist/pglite/template/PG_VERSION",
  "dist/pglite/initdb/PG_VERSION"
]

const newest = (path: string): number => {
  const stat = statSync(path)
  if (!stat.isDirectory()) return stat.mtimeMs
  return readdirSync(path).reduce((latest, name) => Math.max(latest, newest(join(path, name))), stat.mtimeMs)
}

const upToDate = () => {
  if (!ENTRIES.every((entry) => existsSync(entry))) return false
  const built = Math.min(...ENTRIES.slice(0, 2).map((entry) => statSync(entry).mtimeMs))
  return Math.max(...SOURCES.map(newest)) < built
}

export default function setup() {
  if (upToDate()) return
  execFileSync(process.execPath, ["scripts/build.mjs"], { stdio: ["ignore", "ignore", "inherit"] })
}
