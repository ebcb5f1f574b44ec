import { FileSystem } from "@effect/platform"
import { Duration, Effect, Stream } from "effect"
import { GenerationError } from "../../channel/contract/Generation.ts"
import type { AsyncRunner, ResultRef } from "../../channel/contract/Upstream.ts"
import { SNIFF_BYTES } from "../../media/MediaInspector.ts"
import { concatBytes } from "../../platform/Digest.ts"
import type { TaskKind } from "../Task.ts"
import type { DownloadedOutput, Plan } from "./Plans.ts"

/** The largest result accepted from an upstream, per kind: a bigger one is not media we asked for. */
export const MAX_RESULT_BYTES: Record<TaskKind, number> = { video: 1024 * 1024 * 1024, image: 64 * 1024 * 1024 }

/**
 * Downloads the results of a finished upstream task, each bounded in size
 * and in time (`timeouts.download_s`), into temporary files that live as
 * long as the caller's scope: removed whatever happens next (stored, found
 * unusable, failed, interrupted). Only a file's first bytes are kept in
 * memory, for sniffing; with many downloads at once, memory stays flat
 * whatever the results weigh. The bytes are not trusted: the caller passes
 * them through CheckOutputs before they are stored. Type and extension here
 * are placeholders the inspection replaces.
 */
export const fetchResults = (
  kind: TaskKind,
  plan: Plan,
  runner: AsyncRunner<unknown>,
  refs: ReadonlyArray<ResultRef>
) =>
  Effect.forEach(refs, (ref) =>
    Effect.gen(function*() {
      const fs = yield* FileSystem.FileSystem
      const max = MAX_RESULT_BYTES[kind]
      // Too large: not what was asked for, so the task fails (with its refund) at once.
      const tooLarge = () => new GenerationError({ ...plan.internalFailure, retryable: true, transient: false })
      // Slow, or our disk failing: asked again later.
      const again = () => new GenerationError({ ...plan.internalFailure, transient: true })
      const file = yield* fs.makeTempFileScoped({ prefix: "result-" }).pipe(Effect.mapError(again))
      let size = 0
      const head: Array<Uint8Array> = []
      yield* runner.fetchResult(ref).pipe(
        Stream.mapEffect((chunk) => {
          size += chunk.byteLength
          if (size > max) return Effect.fail(tooLarge())
          if (size - chunk.byteLength < SNIFF_BYTES) head.push(chunk)
          return Effect.succeed(chunk)
        }),
        Stream.run(fs.sink(file)),
        Effect.catchTag("SystemError", "BadArgument", () => Effect.fail(again())),
        Effect.timeoutFail({
          duration: Duration.seconds(plan.channel.timeouts.download_s),
          onTimeout: again
        })
      )
      yield* Effect.annotateCurrentSpan("result.bytes", size)
      const output: DownloadedOutput = {
        _tag: "Downloaded",
        path: file,
        // One copy: the head is the file's first chunks, at most one chunk past SNIFF_BYTES.
        head: concatBytes(head).subarray(0, SNIFF_BYTES),
        sizeBytes: size,
        mimeType: ref.mimeType ?? "application/octet-stream",
        extension: "bin"
      }
      return output
    }).pipe(Effect.withSpan("upstream.fetch", { attributes: { "result.kind": kind } })))
