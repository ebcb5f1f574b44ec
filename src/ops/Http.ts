import { HttpApiBuilder } from "@effect/platform"
import { Effect } from "effect"
import { GatewayApi } from "../Api.ts"
import { isReady } from "../platform/Database.ts"
import { ObjectStorage } from "../storage/ObjectStorage.ts"
import { WorkerOpsApi } from "./Api.ts"
import { NotReady } from "./Errors.ts"

/** The object store can be used now (ObjectStorage.available), within the time a readiness probe waits. */
const storageReady = Effect.flatMap(ObjectStorage, (storage) => storage.available).pipe(
  Effect.timeout("3 seconds"),
  Effect.as(true),
  Effect.orElseSucceed(() => false)
)

const healthz = () => Effect.succeed({ status: "ok" as const })

const readyz = () =>
  Effect.gen(function*() {
    const [database, storage] = yield* Effect.all([isReady, storageReady], { concurrency: 2 })
    if (database && storage) return { status: "ok" as const }
    const down = [
      ...(database ? [] : ["the database is unreachable or its migrations are not applied"]),
      ...(storage ? [] : ["object storage is unavailable"])
    ]
    return yield* new NotReady({ message: `Not ready: ${down.join("; ")}.` })
  })

/**
 * `/healthz` is liveness only: the process answers. `/readyz` checks what
 * serving needs, the database and object storage, at once, and names what
 * is down (never why: it answers without a key).
 */
export const OpsLive = HttpApiBuilder.group(
  GatewayApi,
  "ops",
  (handlers) => handlers.handle("healthz", healthz).handle("readyz", readyz)
)

/** The same two on a worker replica's `OPS_PORT`: a worker needs the database and the store as much. */
export const WorkerOpsLive = HttpApiBuilder.group(
  WorkerOpsApi,
  "ops",
  (handlers) => handlers.handle("healthz", healthz).handle("readyz", readyz)
)
