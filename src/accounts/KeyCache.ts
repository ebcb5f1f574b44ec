import { Context, Effect, Layer, Schedule, Stream } from "effect"
import { makeListen } from "../platform/Notifications.ts"
import type { Principal } from "./Account.ts"

/** The NOTIFY channel a key's disabling is announced on; the payload is the key's id. */
export const KEY_DISABLED_CHANNEL = "api_keys_disabled"

/** An upper bound on staleness should a notification ever be missed (listener reconnecting). */
const TTL_MS = 5_000
/** Bounds memory; past it, entries are dropped oldest first. */
const MAX_ENTRIES = 10_000

/**
 * Recent key look-ups of this replica, by key digest. Every request
 * authenticates, and the look-up was a query of its own on the polling path.
 * Only enabled keys are kept, so an unknown or disabled key always goes to
 * the database. A disable evicts here at once and announces itself with
 * NOTIFY; every replica listens and evicts on arrival. While the listener is
 * down nothing is stored, and what was stored is dropped when it fails.
 */
export class KeyCache extends Context.Tag("KeyCache")<KeyCache, {
  readonly get: (hash: string, nowMs: number) => Principal | undefined
  readonly set: (hash: string, principal: Principal, nowMs: number) => void
  readonly evict: (keyId: string) => void
}>() {
  static readonly layer = Layer.scoped(
    KeyCache,
    Effect.gen(function*() {
      const listen = yield* makeListen
      const entries = new Map<string, { readonly principal: Principal; readonly expiresMs: number }>()
      let listening = false
      const stopped = Effect.sync(() => {
        listening = false
        entries.clear()
      })
      const evict = (keyId: string) => {
        for (const [hash, entry] of entries) if (entry.principal.keyId === keyId) entries.delete(hash)
      }
      yield* listen(KEY_DISABLED_CHANNEL).pipe(
        Stream.onStart(Effect.sync(() => {
          entries.clear()
          listening = true
        })),
        Stream.runForEach((keyId) => Effect.sync(() => evict(keyId))),
        Effect.ensuring(stopped),
        Effect.tapErrorCause(() => stopped),
        Effect.retry(Schedule.spaced("1 second")),
        Effect.ignore,
        Effect.forkScoped
      )
      return {
        get: (hash, nowMs) => {
          const entry = entries.get(hash)
          if (entry === undefined) return undefined
          if (entry.expiresMs > nowMs) return entry.principal
          entries.delete(hash)
          return undefined
        },
        set: (hash, principal, nowMs) => {
          if (!listening) return
          if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value!)
          entries.set(hash, { principal, expiresMs: nowMs + TTL_MS })
        },
        evict
      }
    })
  )
}
