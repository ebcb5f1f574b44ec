import { execFileSync } from "node:child_process"
import { existsSync, readdirSync, statSync } from "node:fs"
import { join } from "node:path"

/**
 * vitest's global setup: compiles the service (`npm run build`, esbuild, a
 * second or two) before the tests run when a source is newer than the last
 * build, so the process-level tests start what `npm start` runs, built from
 * the sources under test, never a stale dist/. An up-to-date dist/ is left
 * alone, so a service another run started from it keeps its files.
 */
const SOURCES = ["src", "plugins", "channels", "scripts", "package-lock.json"]
const STAMP = "dist/src/main.js"

const newest = (path: string): number => {
  const stat = statSync(path)
  if (!stat.isDirectory()) return stat.mtimeMs
  return readdirSync(path).reduce((latest, name) => Math.max(latest, newest(join(path, name))), stat.mtimeMs)
}

export default function setup() {
  if (existsSync(STAMP) && Math.max(...SOURCES.map(newest)) < statSync(STAMP).mtimeMs) return
  execFileSync(process.execPath, ["scripts/build.mjs"], { stdio: ["ignore", "ignore", "inherit"] })
}
