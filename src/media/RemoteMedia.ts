import { FileSystem, HttpClient, HttpClientRequest } from "@effect/platform"
import { Context, Data, Effect, Layer, Stream } from "effect"
import { AppConfig } from "../platform/AppConfig.ts"
import { TargetHttpClient } from "../platform/TargetHttpClient.ts"
import { checkTargetUrl, PRIVATE_TARGET } from "../platform/TargetUrl.ts"
import { SNIFF_BYTES } from "./MediaInspector.ts"

/**
 * Why a reference URL could not be fetched, in words for the caller.
 * `transient` failures (network, time-out, 5xx, 429) may succeed later.
 */
export class FetchFailure extends Data.TaggedError("FetchFailure")<{
  readonly message: string
  readonly transient: boolean
}> {}

export interface Fetched {
  /** The file the body was written to. */
  readonly path: string
  /** Its first bytes (up to SNIFF_BYTES), for sniffing the type. */
  readonly head: Uint8Array
  readonly sizeBytes: number
}

const REDIRECTS = new Set([301, 302, 303, 307, 308])

const causeCodes = (error: unknown): Array<string> => {
  const codes: Array<string> = []
  for (let e: any = error, depth = 0; e != null && depth < 6; e = e.cause, depth++) {
    if (typeof e.code === "string") codes.push(e.code)
  }
  return codes
}

const concat = (chunks: ReadonlyArray<Uint8Array>, size: number) => {
  const out = new Uint8Array(size)
  let at = 0
  for (const chunk of chunks) {
    out.set(chunk.subarray(0, size - at), at)
    at += Math.min(chunk.length, size - at)
  }
  return out
}

/**
 * Fetches caller-chosen URLs (reference media, image inputs) into local files,
 * with the rules for outbound requests (docs/api.md): http and https only, no
 * credentials in the URL, and (unless `ALLOW_PRIVATE_TARGETS`) no private
 * address or local name, by the one policy of src/platform/TargetUrl.ts,
 * checked on each URL here and on the address connected to by the runtime's
 * `TargetHttpClient`. Redirects are followed here, at most
 * `uploads.fetch_max_redirects`, each hop checked like the first before it is
 * requested; the body is capped at `maxBytes` and the whole fetch at
 * `uploads.fetch_timeout_s`.
 */
export class RemoteMedia extends Context.Tag("RemoteMedia")<RemoteMedia, {
  readonly fetchToFile: (
    url: string,
    options: { readonly maxBytes: number; readonly file: string }
  ) => Effect.Effect<Fetched, FetchFailure>
}>() {
  static readonly layer = Layer.effect(
    RemoteMedia,
    Effect.gen(function*() {
      const config = yield* AppConfig
      const client = HttpClient.withScope(yield* TargetHttpClient)
      const fs = yield* FileSystem.FileSystem
      const settings = config.limits.uploads

      const transport = (error: unknown) =>
        causeCodes(error).includes(PRIVATE_TARGET)
          ? new FetchFailure({ message: "its host is not a public address", transient: false })
          : new FetchFailure({ message: "its host could not be reached", transient: true })

      /** One hop: the redirect target, or the body written to `file`. */
      const hop = (url: string, maxBytes: number, file: string) =>
        Effect.gen(function*() {
          const target = yield* checkTargetUrl(url, config.allowPrivateTargets).pipe(
            Effect.mapError((e) =>
              new FetchFailure({
                message: e.message.replace(/^Invalid URL "[^"]*": /, "its URL is refused: ").replace(/\.$/, ""),
                transient: false
              })
            )
          )
          const response = yield* client.execute(
            HttpClientRequest.get(target.href, { headers: { accept: "*/*", "user-agent": "media-task-gateway" } })
          ).pipe(Effect.mapError(transport))
          if (REDIRECTS.has(response.status)) {
            const location = response.headers["location"]
            if (location === undefined) {
              return yield* new FetchFailure({
                message: `it answered HTTP ${response.status} without a Location`,
                transient: false
              })
            }
            const next = yield* Effect.try({
              try: () => new URL(location, target).href,
              catch: () => new FetchFailure({ message: "it redirects to an invalid URL", transient: false })
            })
            return { _tag: "Redirect", url: next } as const
          }
          if (response.status !== 200) {
            const transient = response.status >= 500 || response.status === 429 || response.status === 408
            return yield* new FetchFailure({ message: `it answered HTTP ${response.status}`, transient })
          }
          const declared = Number(response.headers["content-length"] ?? NaN)
          const tooLarge = new FetchFailure({ message: `it is larger than ${maxBytes} bytes`, transient: false })
          if (declared > maxBytes) return yield* tooLarge
          const head: Array<Uint8Array> = []
          let size = 0
          yield* response.stream.pipe(
            Stream.mapError(() => new FetchFailure({ message: "its body broke off", transient: true })),
            Stream.mapEffect((chunk) => {
              size += chunk.length
              if (size > maxBytes) return Effect.fail(tooLarge)
              if (size - chunk.length < SNIFF_BYTES) head.push(chunk)
              return Effect.succeed(chunk)
            }),
            Stream.run(fs.sink(file)),
            Effect.catchTag("SystemError", "BadArgument", () =>
              new FetchFailure({ message: "it could not be stored for inspection", transient: true }))
          )
          return {
            _tag: "Body",
            fetched: { path: file, head: concat(head, Math.min(size, SNIFF_BYTES)), sizeBytes: size }
          } as const
        }).pipe(Effect.scoped)

      const fetchToFile = (url: string, options: { readonly maxBytes: number; readonly file: string }) =>
        Effect.gen(function*() {
          let current = url
          for (let redirects = 0;; redirects++) {
            const result = yield* hop(current, options.maxBytes, options.file)
            if (result._tag === "Body") return result.fetched
            if (redirects >= settings.fetch_max_redirects) {
              return yield* new FetchFailure({
                message: `it redirects more than ${settings.fetch_max_redirects} times`,
                transient: false
              })
            }
            current = result.url
          }
        }).pipe(
          Effect.timeoutFail({
            duration: `${settings.fetch_timeout_s} seconds`,
            onTimeout: () =>
              new FetchFailure({ message: `it did not arrive within ${settings.fetch_timeout_s} s`, transient: true })
          }),
          Effect.withSpan("RemoteMedia.fetch")
        )

      return { fetchToFile }
    })
  )
}
