import { Clock, Context, Effect, Layer } from "effect"

/**
 * The per-channel circuit breaker (docs/configuration.md, Routes: Failover). A
 * channel that did not take a task (refused, throttled, overloaded) is open for
 * its `breaker_cooldown_s`: its tasks go to the model's next channel without
 * trying it. The state is per process: each
 * replica learns on its own, at the cost of one refused try per replica and
 * cool-down, and nothing is lost when a replica stops.
 */
export class Breakers extends Context.Tag("Breakers")<Breakers, {
  readonly trip: (channel: string, cooldownMs: number) => Effect.Effect<void>
  readonly isOpen: (channel: string) => Effect.Effect<boolean>
  /** When each channel's breaker closes again (ms; in the past when closed): what this replica reports. */
  readonly openUntil: (channel: string) => number
  /** The channels whose breaker is open now, in this process (the metrics' breaker gauge). */
  readonly opened: Effect.Effect<ReadonlyArray<string>>
}>() {
  static readonly layer = Layer.sync(Breakers, () => {
    const openUntil = new Map<string, number>()
    return {
      trip: (channel, cooldownMs) =>
        Effect.map(Clock.currentTimeMillis, (now) => void openUntil.set(channel, now + cooldownMs)),
      isOpen: (channel) => Effect.map(Clock.currentTimeMillis, (now) => (openUntil.get(channel) ?? 0) > now),
      openUntil: (channel) => openUntil.get(channel) ?? 0,
      opened: Effect.map(
        Clock.currentTimeMillis,
        (now) => [...openUntil].filter(([, until]) => until > now).map(([channel]) => channel)
      )
    }
  })
}
