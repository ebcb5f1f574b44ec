import { FileSystem, HttpApiBuilder, HttpRouter, HttpServerResponse, Path } from "@effect/platform"
import { Effect } from "effect"

/**
 * The console's pages may run only the bundle the build wrote (no inline
 * script, no eval), load styles, media and data only from this origin, and
 * be framed by nobody. Result media are served by the console's own
 * endpoints, so `'self'` covers the video and image elements too.
 */
export const CONSOLE_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' blob: data:",
  "media-src 'self'",
  "connect-src 'self'",
  "font-src 'self'",
  "manifest-src 'self'",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'"
].join("; ")

const TYPES: Readonly<Record<string, string>> = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".json": "application/json",
  ".woff2": "font/woff2"
}

/** Built file names only: letters, digits, dots, dashes, underscores; no path can leave the folder. */
const SAFE_NAME = /^[A-Za-z0-9_-][A-Za-z0-9._-]{0,127}$/

/**
 * Where `vite build` writes the front end (console/dist at the repository
 * root), from this module in src/console/ or compiled in dist/src/console/.
 */
const CONSOLE_DIST = new URL(
  import.meta.url.endsWith("/dist/src/console/StaticFiles.js") ? "../../../console/dist/" : "../../console/dist/",
  import.meta.url
)
const distDir = Effect.flatMap(Path.Path, (path) => path.fromFileUrl(CONSOLE_DIST))

const NOT_BUILT = `<!doctype html><meta charset="utf-8"><title>Console not built</title>
<p>The console's front end has not been built. Run <code>npm run build:console</code> (npm install does it) and reload.</p>`

const headers = (type: string, cache: string) => ({
  "content-type": type,
  "cache-control": cache,
  "content-security-policy": CONSOLE_POLICY,
  "x-frame-options": "DENY"
})

const readFile = (relative: ReadonlyArray<string>, cache: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const dir = yield* Effect.orDie(distDir)
    const file = path.join(dir, ...relative)
    const type = TYPES[path.extname(file)] ?? "application/octet-stream"
    return yield* fs.readFile(file).pipe(
      Effect.map((bytes) => HttpServerResponse.uint8Array(bytes, { headers: headers(type, cache) })),
      Effect.orElseSucceed(() => undefined)
    )
  })

/** The page itself; the front end routes by the URL's fragment, so this one document serves every page. */
const indexPage = Effect.map(
  readFile(["index.html"], "no-cache"),
  (found) =>
    found ??
      HttpServerResponse.text(NOT_BUILT, { status: 503, headers: headers("text/html; charset=utf-8", "no-store") })
)

const missing = HttpServerResponse.text("Not found", {
  status: 404,
  headers: headers("text/plain; charset=utf-8", "no-store")
})

/** Hashed bundle files never change under one name, so browsers may keep them. */
const bundleFile = Effect.gen(function*() {
  const { file } = yield* HttpRouter.params
  if (file === undefined || !SAFE_NAME.test(file)) return missing
  return (yield* readFile(["assets", file], "public, max-age=31536000, immutable")) ?? missing
})

/** Files the build copies to the root (the icon). */
const rootFile = Effect.gen(function*() {
  const { file } = yield* HttpRouter.params
  if (file === undefined || !SAFE_NAME.test(file) || file === "index.html") return missing
  return (yield* readFile([file], "public, max-age=3600")) ?? missing
})

/**
 * The built front end at `/console`, as plain routes on the gateway's router
 * beside the contract: these answer files as they are on disk, with a type by
 * extension, a cache policy by kind and the console's Content-Security-Policy,
 * and the page's "not built" note. An HttpApi endpoint encodes an answer from
 * a schema and would add nothing here (the files are not part of any contract).
 */
export const ConsoleFilesLive = HttpApiBuilder.Router.use((router) =>
  Effect.gen(function*() {
    yield* router.get("/console", indexPage)
    yield* router.get("/console/assets/:file", bundleFile)
    yield* router.get("/console/:file", rootFile)
  })
)
