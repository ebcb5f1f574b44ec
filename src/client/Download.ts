import { FileSystem, HttpClientRequest, Path } from "@effect/platform"
import { Effect, Stream } from "effect"
import type { UrlAuth } from "../assets/Asset.ts"
import { GatewayClient } from "./Client.ts"
import { LocalFileError, NetworkError } from "./Errors.ts"
import type { AnyTask } from "./Tasks.ts"

/** What a download needs of a result item (spec: Video / Image result item) or an asset. */
export interface Downloadable {
  readonly asset_id: string
  readonly url: string
  readonly mime_type: string
  readonly filename?: string | undefined
  /** Video results and assets say how to authenticate; image results carry none, which means `none`. */
  readonly url_auth?: UrlAuth | undefined
}

export interface DownloadOptions {
  /** Bytes received so far and the announced length, when known. */
  readonly onProgress?: ((received: number, total: number | undefined) => void) | undefined
}

const EXTENSIONS: Readonly<Record<string, string>> = {
  "video/mp4": "mp4",
  "video/quicktime": "mov",
  "image/png": "png",
  "image/jpeg": "jpg",
  "image/webp": "webp"
}

/** A file name from the item, never a path: the server's suggestion must not write outside `dir`. */
const safeName = (item: Downloadable, path: Path.Path) => {
  const suggested = item.filename === undefined ? "" : path.basename(item.filename.replaceAll("\\", "/"))
  if (/^[\w.-]+$/.test(suggested) && !suggested.startsWith(".")) return suggested
  return `${item.asset_id.replace(/[^\w-]/g, "_")}.${EXTENSIONS[item.mime_type] ?? "bin"}`
}

/**
 * Whether to send the resource key. The item says so (`url_auth`); an image
 * item from a server older than `url_auth` on image items has none, so for
 * it the key goes only to the gateway's own API paths (an asset's content
 * URL), never to another host.
 */
const needsKey = (item: Downloadable, url: string, baseUrl: string) => {
  if (item.url_auth !== undefined) return item.url_auth === "resource_api_key"
  const target = new URL(url)
  return target.origin === new URL(baseUrl).origin && target.pathname.startsWith("/v1/")
}

/**
 * Downloads one result into `dir` as the spec says: `url_auth: none` fetches
 * `url` exactly as given (its signed query string intact) with no key;
 * `resource_api_key` sends the resource key as a bearer token. The bytes go
 * to a `.part` file renamed at the end, so a broken download never looks
 * complete. Returns the file's path.
 */
export const downloadResult = (item: Downloadable, dir: string, options: DownloadOptions = {}) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const client = yield* GatewayClient
    const target = path.join(dir, safeName(item, path))
    const partial = `${target}.part`
    const url = new URL(item.url, client.config.baseUrl).toString()
    const auth = needsKey(item, url, client.config.baseUrl) && client.config.resourceKey !== undefined
      ? HttpClientRequest.bearerToken(client.config.resourceKey)
      : (r: HttpClientRequest.HttpClientRequest) => r
    const response = yield* client.http.execute(auth(HttpClientRequest.get(url)))
    const announced = Number(response.headers["content-length"])
    const total = Number.isFinite(announced) ? announced : undefined
    let received = 0
    const cannotWrite = () => new LocalFileError({ path: target, message: "the file cannot be written" })
    yield* Effect.orElseFail(fs.makeDirectory(dir, { recursive: true }), cannotWrite)
    yield* response.stream.pipe(
      Stream.tap((chunk) => Effect.sync(() => options.onProgress?.(received += chunk.byteLength, total))),
      Stream.run(fs.sink(partial)),
      Effect.catchTag("SystemError", "BadArgument", () => Effect.fail(cannotWrite())),
      Effect.catchTag(
        "ResponseError",
        (e) => Effect.fail(new NetworkError({ url, message: `the download broke off: ${e.message}` }))
      )
    )
    yield* Effect.orElseFail(fs.rename(partial, target), cannotWrite)
    return target
  })

/** Every result file of a succeeded task, into `dir`, in result order. */
export const downloadTaskResults = (task: AnyTask, dir: string, options: DownloadOptions = {}) => {
  const items: ReadonlyArray<Downloadable> = task.result === null
    ? []
    : "videos" in task.result
    ? task.result.videos
    : task.result.images
  return Effect.forEach(items, (item) => downloadResult(item, dir, options))
}
