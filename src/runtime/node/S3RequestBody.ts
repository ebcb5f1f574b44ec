import { Effect, Layer, Stream } from "effect"
import { Readable } from "node:stream"
import type { ReadableStream as NodeWebStream } from "node:stream/web"
import { S3RequestBody } from "../../storage/S3RequestBody.ts"

/**
 * Streamed S3 bodies as Node `Readable`s, the form the SDK's Node handler
 * pipes into the request as it reads, so an object is never whole in memory.
 * Destroying it (when the put ends, however) cancels the stream, which closes its source.
 */
export const S3RequestBodyLive = Layer.succeed(S3RequestBody, {
  fromStream: (body) =>
    Effect.acquireRelease(
      Effect.sync(() =>
        Readable.fromWeb(Stream.toReadableStream(body) as unknown as NodeWebStream<Uint8Array>)
          // The body's failure reaches the put by its own path (S3ObjectStorage.ts races it); the SDK only
          // pipes the body, so unheard here it would be an uncaught exception.
          .on("error", () => {})
      ),
      (readable) => Effect.sync(() => readable.destroy())
    )
})
