import { execFileSync } from "node:child_process"

/**
 * vitest's global setup: compiles the service (`npm run build`, esbuild, a
 * second or two) before the tests run, so the process-level tests start what
 * `npm start` runs, built from the sources under test, never a stale dist/.
 */
export default function setup() {
  execFileSync(process.execPath, ["scripts/build.mjs"], { stdio: ["ignore", "ignore", "inherit"] })
}
