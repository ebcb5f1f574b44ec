import { Clock, Effect } from "effect"

/** Unix seconds, the unit of every timestamp of the API. */
export const nowSeconds: Effect.Effect<number> = Effect.map(Clock.currentTimeMillis, (ms) => Math.floor(ms / 1000))
