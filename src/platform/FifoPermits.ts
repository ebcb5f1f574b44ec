import { Effect, Queue } from "effect"

/**
 * A fixed number of permits handed out first come, first served, each
 * release waking exactly one waiter. Effect's Semaphore wakes every waiter
 * on each release, and each one that finds the permits taken again waits
 * anew inside the effect that woke it: with thousands waiting (every submit
 * of a burst waiting for its turn at an upstream's request budget) a
 * worker's memory grew by gigabytes of nested continuations within minutes.
 * Here the waiters queue on a Queue of permits, which resumes one taker per
 * permit given back.
 */
export const makeFifoPermits = (permits: number) =>
  Effect.gen(function*() {
    const pool = yield* Queue.bounded<void>(Math.max(1, permits))
    yield* pool.offerAll(Array.from({ length: Math.max(1, permits) }, () => undefined))
    /**
     * Runs `effect` holding one permit, given back however it ends. The wait
     * stays interruptible (an acquire of `acquireUseRelease` is not): a
     * worker stopping while submits wait for their turn must not sit until
     * each gets its permit, and start the very requests it is stopping for.
     */
    const withPermit = <A, E, R>(effect: Effect.Effect<A, E, R>) =>
      Effect.uninterruptibleMask((restore) =>
        restore(pool.take).pipe(
          Effect.zipRight(restore(effect).pipe(Effect.ensuring(pool.offer(undefined))))
        )
      )
    return { withPermit } as const
  })
