import { Chunk, Context, Effect, type Scope, Stream } from "effect"
import { concatBytes } from "../platform/Digest.ts"
import type { StorageError } from "./StorageError.ts"

export interface S3RequestBodyService {
  /**
   * What the AWS SDK sends as `Body` while it reads `body`, no more of it in
   * memory than a chunk or two; released (its source closed) with the scope,
   * whether or not the SDK read it to the end.
   */
  readonly fromStream: (
    body: Stream.Stream<Uint8Array, StorageError>
  ) => Effect.Effect<unknown, StorageError, Scope.Scope>
}

/**
 * A streamed body for the AWS SDK. Its HTTP handler on Node (also the one
 * Deno runs, through its Node compatibility) pipes a Node `Readable` and
 * sends bytes whole; a web ReadableStream it cannot send. The core names no
 * `node:` module, so a runtime provides the conversion
 * (src/runtime/node/S3RequestBody.ts). Without one, the body is gathered
 * into one array first: correct on any runtime, but the whole object is
 * held in memory while it is sent.
 */
export class S3RequestBody extends Context.Reference<S3RequestBody>()("S3RequestBody", {
  defaultValue: (): S3RequestBodyService => ({
    fromStream: (body) => Effect.map(Stream.runCollect(body), (chunks) => concatBytes(Chunk.toReadonlyArray(chunks)))
  })
}) {}
