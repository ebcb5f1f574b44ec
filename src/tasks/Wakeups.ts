import { Effect } from "effect"

/**
 * The wake-ups of a channel's idle workers after creates (`NOTIFY
 * tasks_queued`), at most one on the wire per channel at a time.
 *
 * Every create must be followed by a wake-up sent after its commit, or its
 * task waits for the workers' periodic look. One NOTIFY per create meets
 * that, but each is a transaction of its own that PostgreSQL commits under a
 * global lock: at a few hundred creates a second that doubled the
 * database's commits. Here a create that commits while a wake-up of its
 * channel is on the wire asks for one more, sent when that one is done;
 * any number of creates in the meantime share it. So every create is still
 * followed by a wake-up that left after its commit, and a burst costs one
 * NOTIFY per round trip instead of one per create.
 *
 * The create does not wait for its wake-up: the task is committed, the 202
 * can go. A wake-up that fails is dropped, as a lost NOTIFY is (the
 * periodic look finds the task).
 */
export const makeWakeups = (send: (channel: string) => Effect.Effect<unknown, unknown>) => {
  /** The channels with a wake-up on the wire, and whether another was asked for since it left. */
  const onTheWire = new Map<string, boolean>()
  const sendFrom = (channel: string): Effect.Effect<void> =>
    Effect.zipRight(
      Effect.ignore(send(channel)),
      Effect.suspend(() => {
        if (onTheWire.get(channel) !== true) {
          onTheWire.delete(channel)
          return Effect.void
        }
        onTheWire.set(channel, false)
        return sendFrom(channel)
      })
    )
  return (channel: string): Effect.Effect<void> =>
    Effect.suspend(() => {
      if (onTheWire.has(channel)) {
        onTheWire.set(channel, true)
        return Effect.void
      }
      onTheWire.set(channel, false)
      return Effect.asVoid(Effect.forkDaemon(sendFrom(channel)))
    })
}
