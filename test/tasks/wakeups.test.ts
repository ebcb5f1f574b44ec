import { Deferred, Effect } from "effect"
import { describe, expect, it } from "vitest"
import { makeWakeups } from "../../src/tasks/Wakeups.ts"

/**
 * The creates' wake-ups (src/tasks/Wakeups.ts): every create is followed by
 * a wake-up that left after it, and creates made while one is on the wire
 * share the next. The sender here is held on the wire until the test lets
 * it go, so what was sent when is exact.
 */

/** A sender that records each wake-up and holds it on the wire until `release`. */
const heldSender = () => {
  const sent: Array<string> = []
  const held: Array<Deferred.Deferred<void, Error>> = []
  const send = (channel: string) =>
    Effect.flatMap(Deferred.make<void, Error>(), (wire) => {
      sent.push(channel)
      held.push(wire)
      return Deferred.await(wire)
    })
  /** Lets the oldest wake-up on the wire finish (or fail), then lets the sender run on. */
  const release = (failure?: Error) =>
    Effect.runPromise(
      Effect.zipRight(
        failure === undefined ? Deferred.succeed(held.shift()!, undefined) : Deferred.fail(held.shift()!, failure),
        Effect.yieldNow()
      )
    ).then(() => new Promise((resolve) => setTimeout(resolve, 5)))
  return { sent, held, send, release }
}

/** Wake-ups over a held sender, and a create's call for one (its effect run, then a turn for the fork to start). */
const heldWakeups = () => {
  const sender = heldSender()
  const wakeUp = makeWakeups(sender.send)
  const wake = (channel: string) => Effect.runPromise(Effect.zipRight(wakeUp(channel), Effect.yieldNow()))
  return { ...sender, wake }
}

describe("creates' wake-ups", () => {
  it("the first create's wake-up leaves at once, and the create does not wait for it", async () => {
    const sender = heldWakeups()
    await sender.wake("alpha")
    expect(sender.sent).toEqual(["alpha"])
    expect(sender.held).toHaveLength(1)
  })

  it("creates made while a wake-up is on the wire share one more, sent after it", async () => {
    const sender = heldWakeups()
    await sender.wake("alpha")
    for (let i = 0; i < 5; i++) await sender.wake("alpha")
    expect(sender.sent).toEqual(["alpha"])
    await sender.release()
    // The five creates committed after the first wake-up left: one more, which left after them.
    expect(sender.sent).toEqual(["alpha", "alpha"])
    await sender.release()
    expect(sender.sent).toEqual(["alpha", "alpha"])
    // Nothing on the wire now: the next create's wake-up leaves at once.
    await sender.wake("alpha")
    expect(sender.sent).toEqual(["alpha", "alpha", "alpha"])
  })

  it("each channel has its own wake-ups", async () => {
    const sender = heldWakeups()
    await sender.wake("alpha")
    await sender.wake("beta")
    await sender.wake("alpha")
    expect(sender.sent).toEqual(["alpha", "beta"])
    await sender.release() // alpha's: the second alpha create's goes
    expect(sender.sent).toEqual(["alpha", "beta", "alpha"])
  })

  it("a wake-up that fails is dropped, and the ones asked for meanwhile still go", async () => {
    const sender = heldWakeups()
    await sender.wake("alpha")
    await sender.wake("alpha")
    await sender.release(new Error("the database went away"))
    expect(sender.sent).toEqual(["alpha", "alpha"])
    await sender.release()
    await sender.wake("alpha")
    expect(sender.sent).toEqual(["alpha", "alpha", "alpha"])
  })
})
