#!/usr/bin/env node
// `mtg`, the gateway's command-line tool. The project runs TypeScript through
// tsx, so this loads the TypeScript entry point with tsx's ESM loader.
import { register } from "tsx/esm/api"

register()
await import(new URL("../src/cli/main.ts", import.meta.url).href)
