/**
 * Waiting in tests. A test that waits for something to happen polls for it
 * with `eventually`; it never sleeps for a guessed time, which fails on a
 * loaded machine and wastes time on an idle one. `sleep` is for the few
 * scenarios where the elapsed wall-clock time is itself the point (an outage
 * held open for N seconds, a period in which nothing may happen); each such
 * call says why. Time logic inside the gateway is tested on Effect's
 * `TestClock` instead (`./clock.ts`).
 */

export const sleep = (ms: number) => new Promise<void>((done) => setTimeout(done, ms))

export interface Patience {
  /** Give up after this long; 30 s by default (a deadline, never a speed measurement). */
  readonly deadlineMs?: number
  /** Time between two checks; 100 ms by default. */
  readonly intervalMs?: number
}

/**
 * Checks `check` until it gives something other than `undefined` or `false`,
 * and returns that. A check that throws counts as not yet; after the deadline
 * the error names `what` and the last error seen.
 */
export const eventually = async <A>(
  check: () => A | Promise<A>,
  what: string,
  { deadlineMs = 30_000, intervalMs = 100 }: Patience = {}
): Promise<Exclude<A, undefined | false>> => {
  const until = Date.now() + deadlineMs
  let last: unknown
  for (;;) {
    try {
      const found = await check()
      if (found !== undefined && found !== false) return found as Exclude<A, undefined | false>
    } catch (e) {
      last = e
    }
    if (Date.now() >= until) {
      throw new Error(`never within ${deadlineMs} ms: ${what}${last === undefined ? "" : ` (last error: ${last})`}`)
    }
    await sleep(intervalMs)
  }
}
