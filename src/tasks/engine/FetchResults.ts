import { Duration, Effect, Stream } from "effect"
import { GenerationError } from "../../channel/Generation.ts"
import type { AsyncRunner, ResultRef } from "../../channel/Upstream.ts"
import { concatBytes } from "../../platform/Digest.ts"
import type { TaskKind } from "../Task.ts"
import type { Output, Plan } from "./Plans.ts"

/** The largest result accepted from an upstream, per kind: a bigger one is not media we asked for. */
export const MAX_RESULT_BYTES: Record<TaskKind, number> = { video: 1024 * 1024 * 1024, image: 64 * 1024 * 1024 }

/**
 * Downloads the results of a finished upstream task, each bounded in size
 * and in time (`timeouts.download_s`). The bytes are not trusted: the caller
 * passes them through CheckOutputs before they are stored. Type and
 * extension here are placeholders the inspection replaces.
 */
export const fetchResults = (
  kind: TaskKind,
  plan: Plan,
  runner: AsyncRunner<unknown>,
  refs: ReadonlyArray<ResultRef>
) =>
  Effect.forEach(refs, (ref) =>
    Effect.gen(function*() {
      const max = MAX_RESULT_BYTES[kind]
      let size = 0
      const chunks: Array<Uint8Array> = []
      yield* runner.fetchResult(ref).pipe(
        Stream.runForEach((chunk) => {
          size += chunk.byteLength
          if (size > max) {
            return Effect.fail(new GenerationError({ ...plan.internalFailure, retryable: true, transient: false }))
          }
          chunks.push(chunk)
          return Effect.void
        }),
        Effect.timeoutFail({
          duration: Duration.seconds(plan.channel.timeouts.download_s),
          onTimeout: () => new GenerationError({ ...plan.internalFailure, transient: true })
        })
      )
      const output: Output = {
        _tag: "Output",
        bytes: concatBytes(chunks),
        mimeType: ref.mimeType ?? "application/octet-stream",
        extension: "bin"
      }
      return output
    }).pipe(Effect.withSpan("upstream.fetch", { attributes: { "result.kind": kind } })))
