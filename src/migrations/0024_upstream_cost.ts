/**
 * What each attempt cost at its provider (docs/operating.md, Money), for
 * operators only: the usage the provider reported for it (or, where its
 * answer gives none, what the request implies), the cost that usage comes
 * to by the route's `cost` (micro-units of the operator's money, as credits
 * are kept), and whether the provider bills the attempt at all by its own
 * rules (fal bills successes only; Replicate bills a cancel after the start
 * but not an abort; Veo does not bill a blocked video; an ambiguous create
 * counts as billed until found otherwise). Null where nothing is known yet,
 * or the route declares no cost. Read by time for the usage report and the
 * losses (`task_attempts_created`).
 */
export default [
  `ALTER TABLE task_attempts ADD COLUMN usage jsonb, ADD COLUMN cost_micros bigint, ADD COLUMN billed boolean`,
  `CREATE INDEX task_attempts_created ON task_attempts (created_at)`
]
