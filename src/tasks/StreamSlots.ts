import { Context, Effect, Layer, type Scope } from "effect"
import { RateLimited } from "../accounts/Errors.ts"
import { AppConfig } from "../platform/AppConfig.ts"

/**
 * The bound of live status streams one key holds open on this replica
 * (`limits.json` `streams_per_key`). A slot is held for the scope of the
 * request, so it is given back however the stream ends: the task settled,
 * the client left, the server drained.
 */
export class StreamSlots extends Context.Tag("StreamSlots")<StreamSlots, {
  /** A slot for the key until the scope closes; 429 when the key holds the bound already. */
  readonly take: (keyId: string) => Effect.Effect<void, RateLimited, Scope.Scope>
  /**
   * The same slot, given back by calling what this returns (once): for an
   * answer the server writes itself, which holds no scope (FastTaskEvents.ts).
   */
  readonly hold: (keyId: string) => Effect.Effect<() => void, RateLimited>
  /** Open streams of this replica, all keys. */
  readonly open: () => number
}>() {
  static readonly layer = Layer.effect(
    StreamSlots,
    Effect.gen(function*() {
      const { limits } = yield* AppConfig
      const held = new Map<string, number>()
      let open = 0
      const hold = (keyId: string) =>
        Effect.suspend(() => {
          const now = held.get(keyId) ?? 0
          if (now >= limits.streams_per_key) {
            return Effect.fail(
              new RateLimited({
                message: `This key holds ${limits.streams_per_key} open task streams already; close one first.`,
                retryAfter: limits.poll_interval_s
              })
            )
          }
          held.set(keyId, now + 1)
          open++
          let given = false
          return Effect.succeed(() => {
            if (given) return
            given = true
            const now = (held.get(keyId) ?? 1) - 1
            if (now === 0) held.delete(keyId)
            else held.set(keyId, now)
            open--
          })
        })
      const take = (keyId: string) => Effect.asVoid(Effect.acquireRelease(hold(keyId), (give) => Effect.sync(give)))
      return { take, hold, open: () => open }
    })
  )
}
