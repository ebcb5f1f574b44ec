#!/usr/bin/env node
// `mtg`, the gateway's command-line tool: src/cli/main.ts compiled with the
// service (scripts/build.mjs, which `npm install` runs through `prepare`) to
// dist/src/cli/main.js, run with plain Node, no TypeScript loader. After
// changing the sources, `npm run build` compiles it again. Where nothing was
// built (installed with --ignore-scripts), the TypeScript entry point is
// loaded through tsx instead, as before: slower (seconds compiling at every
// command) but the same tool.
import { existsSync } from "node:fs"

const compiled = new URL("../dist/src/cli/main.js", import.meta.url)
if (existsSync(compiled)) {
  await import(compiled.href)
} else {
  const { register } = await import("tsx/esm/api")
  register()
  await import(new URL("../src/cli/main.ts", import.meta.url).href)
}
