import { Duration, Effect, Schedule } from "effect"
import { AppConfig } from "../../platform/AppConfig.ts"
import { IdPrefix, newId } from "../../platform/Ids.ts"
import { ObjectStorage } from "../../storage/ObjectStorage.ts"
import { isPassing, StorageError } from "../../storage/StorageError.ts"
import type { Claim } from "./Claim.ts"
import { type Output, type Plan, sizeOf } from "./Plans.ts"
import type { NewAsset } from "./sql/insertAsset.ts"

/**
 * Re-hosts a task's checked outputs in object storage (whichever way they
 * were made: in process, or downloaded from an upstream) and returns the
 * assets to insert with the success and the result items of the spec. The
 * caller only ever sees our URLs, never an upstream's.
 */
export const storeOutputs = (
  claim: Claim,
  plan: Plan,
  outputs: ReadonlyArray<Output>,
  /** The outputs' asset ids, when chosen before (a spooled result keeps its ids from try to try). */
  assetIds: ReadonlyArray<string> = newAssetIds(outputs.length)
) =>
  Effect.gen(function*() {
    const storage = yield* ObjectStorage
    const config = yield* AppConfig
    // A blip is ridden out here; a store that stays away makes the task wait (RunTask.ts, PollTask.ts).
    const retrySchedule = Schedule.exponential(config.limits.engine.retry_base_ms).pipe(
      Schedule.intersect(Schedule.recurs(config.limits.engine.generate_retries))
    )
    return yield* Effect.forEach(outputs, (output, index) =>
      Effect.gen(function*() {
        const id = assetIds[index]!
        const filename = `${id}.${output.extension}`
        const storageKey = `results/${claim.id}/${filename}`
        // A downloaded result is stored from its file (a retry starts it again), never whole in memory.
        // However the store misbehaves, one put ends: within a few call time-outs plus a second per MiB
        // (a store that takes bytes and never answers counts as away, as a refused connection does).
        const boundMs = config.limits.storage.request_timeout_s * 3000 + Math.ceil(sizeOf(output) / 1024)
        yield* (output._tag === "Downloaded"
          ? storage.putFile(storageKey, output.path, output.sizeBytes, output.mimeType)
          : storage.put(storageKey, output.bytes, output.mimeType)).pipe(
            Effect.timeoutFail({
              duration: Duration.millis(boundMs),
              onTimeout: () =>
                new StorageError({ message: `Storing ${storageKey} took over ${boundMs} ms.`, fault: "unavailable" })
            })
          )
        const signed = plan.channel.url_auth === "none"
          ? yield* storage.presignGet(storageKey, { expiresInS: plan.channel.result_url_ttl_s })
          : undefined
        const link = signed !== undefined
          ? { url: signed.url, temporary: true }
          : { url: `${config.publicBaseUrl}/v1/assets/${id}/content`, temporary: false }
        const asset: NewAsset = {
          id,
          storageKey,
          mimeType: output.mimeType,
          filename,
          sizeBytes: sizeOf(output),
          width: output.width ?? null,
          height: output.height ?? null,
          durationMs: output.durationMs ?? null,
          url: link.url,
          urlAuth: plan.channel.url_auth,
          expiresAt: signed?.expiresAt ?? null
        }
        return { asset, item: plan.item(output, { id, filename, ...link }, index) }
      })).pipe(
        Effect.retry({ schedule: retrySchedule, while: isPassing }),
        Effect.withSpan("task.store", { attributes: { "task.id": claim.id, "task.outputs": outputs.length } })
      )
  })

/** Fresh asset ids for `count` outputs. */
export const newAssetIds = (count: number) => Array.from({ length: count }, () => newId(IdPrefix.asset))
