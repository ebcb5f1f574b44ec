import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { GatewayApi } from "../Api.ts"
import { isReady } from "../platform/Database.ts"
import { ObjectStorage } from "../storage/ObjectStorage.ts"
import { NotReady } from "./Errors.ts"

/** The object store can be used now (ObjectStorage.available), within the time a readiness probe waits. */
const storageReady = Effect.flatMap(ObjectStorage, (storage) => storage.available).pipe(
  Effect.timeout("3 seconds"),
  Effect.as(true),
  Effect.orElseSucceed(() => false)
)

/**
 * `/healthz` is liveness only: the process answers. `/readyz` checks what
 * serving needs, the database and object storage, at once, and names what
 * is down (never why: it answers without a key).
 */
export const OpsLive = HttpApiBuilder.group(GatewayApi, "ops", (handlers) =>
  handlers
    .handle("healthz", () => Effect.succeed({ status: "ok" as const }))
    .handle("readyz", () =>
      Effect.gen(function*() {
        const [database, storage] = yield* Effect.all([isReady, storageReady], { concurrency: 2 })
        if (database && storage) return { status: "ok" as const }
        const down = [
          ...(database ? [] : ["the database is unreachable or its migrations are not applied"]),
          ...(storage ? [] : ["object storage is unavailable"])
        ]
        return yield* new NotReady({ message: `Not ready: ${down.join("; ")}.` })
      })))
