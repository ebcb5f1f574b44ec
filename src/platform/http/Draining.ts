import { Context, Deferred, Effect, Layer } from "effect"

/**
 * The server's shutdown as the handlers see it: the runtime's server begins
 * it as the first step of its close, before it waits for open responses, so
 * responses that would never end by themselves (live status streams) end
 * cleanly and the server's close is not held until it cuts them.
 */
export class Draining extends Context.Tag("Draining")<Draining, {
  /** Called by the server when it starts closing. */
  readonly begin: Effect.Effect<void>
  /** Completes once the server has started closing. */
  readonly started: Effect.Effect<void>
}>() {
  static readonly layer = Layer.effect(
    Draining,
    Effect.map(Deferred.make<void>(), (started) => ({
      begin: Effect.asVoid(Deferred.succeed(started, undefined)),
      started: Deferred.await(started)
    }))
  )
}
