/**
 * The upstream request budget of channels that have one (docs/engine.md,
 * The upstream request budget), kept by every replica together:
 * - `upstream_budgets`: a row per channel and schedule (`all`, `reads`, and
 *   an operation with a rate of its own) holding the next free slot
 *   (`next_at`, ms on the database's clock, so replicas' clocks do not
 *   matter). A request's slot is reserved with one UPDATE of its rows. The
 *   `all` row also holds the channel's rate factor as the last throttling
 *   answer left it (`factor`, at `lowered_at`), from which it climbs back.
 * - `tasks.polled_at`: when the task's last poll was sent (ms), so the gap to
 *   the next one is measured whichever replica polls it.
 */
export default [
  `CREATE TABLE upstream_budgets (
    channel text NOT NULL,
    schedule text NOT NULL,
    next_at double precision NOT NULL,
    factor double precision NOT NULL DEFAULT 1 CHECK (factor > 0 AND factor <= 1),
    lowered_at double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (channel, schedule)
  )`,
  `ALTER TABLE tasks ADD COLUMN polled_at bigint`
]
