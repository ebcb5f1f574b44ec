import { Schema } from "effect"
import { failure } from "../platform/Failure.ts"

/** The database is unreachable or its migrations are not applied: no traffic yet. */
export class NotReady extends Schema.TaggedError<NotReady>()("NotReady", {
  ...failure(503, "not_ready"),
  message: Schema.String
}) {}

/** The channel's adapter cannot read its provider's own record of tasks (it has no `list`). */
export class ReconciliationUnavailable
  extends Schema.TaggedError<ReconciliationUnavailable>()("ReconciliationUnavailable", {
    ...failure(409, "reconciliation_unavailable"),
    message: Schema.String
  })
{}

/** A reconciliation's window that is not one: `from` not before `to`, or longer than the providers keep. */
export class InvalidReconcileWindow extends Schema.TaggedError<InvalidReconcileWindow>()("InvalidReconcileWindow", {
  ...failure(400, "invalid_request"),
  message: Schema.String
}) {}

/** The provider did not answer the list a reconciliation asked for (refused, throttled, away). */
export class ReconciliationFailed extends Schema.TaggedError<ReconciliationFailed>()("ReconciliationFailed", {
  ...failure(502, "reconciliation_failed"),
  message: Schema.String
}) {}
