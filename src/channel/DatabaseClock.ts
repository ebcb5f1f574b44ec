/**
 * The database's clock as one process sees it. A slot of the shared
 * schedule is a time on the database's clock; this process sleeps on its
 * own. Each reservation's answer says what the database's clock read while
 * the statement ran, which happened before the answer arrived, so
 * `database now − local time at the answer` is a lower bound of the offset
 * between the two clocks. The largest bound seen lately is the closest one
 * (from the quickest round trip): a slot turned into local time with it is
 * never early, and late by at most that round trip, not by the slowest one.
 * Bounds older than a minute are dropped, so a clock that is stepped is
 * followed.
 */
export interface DatabaseClock {
  /** One answer: the database's clock as it ran (ms), and this process's clock when the answer arrived. */
  readonly sample: (databaseNow: number, localAtAnswer: number) => void
  /** A time on the database's clock (ms) on this process's clock. */
  readonly toLocal: (databaseTime: number) => number
}

const BUCKET_MS = 30_000

export const makeDatabaseClock = (): DatabaseClock => {
  // The best bound of this bucket and of the one before it: every bound kept is under a minute old.
  let bucket = { since: -Infinity, best: -Infinity }
  let previous = -Infinity
  return {
    sample: (databaseNow, localAtAnswer) => {
      if (localAtAnswer - bucket.since >= BUCKET_MS || localAtAnswer < bucket.since) {
        previous = localAtAnswer - bucket.since < 2 * BUCKET_MS ? bucket.best : -Infinity
        bucket = { since: localAtAnswer, best: -Infinity }
      }
      bucket.best = Math.max(bucket.best, databaseNow - localAtAnswer)
    },
    toLocal: (databaseTime) => databaseTime - Math.max(bucket.best, previous)
  }
}
