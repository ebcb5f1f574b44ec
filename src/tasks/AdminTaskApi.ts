import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { AccountDetail } from "../accounts/Account.ts"
import { AdminAuth } from "../accounts/Security.ts"
import { errors, ResourceId } from "../platform/http/ErrorContract.ts"
import { TaskNotFound } from "./Errors.ts"
import { ImageTask, VideoTask } from "./Task.ts"

const taskPath = Schema.Struct({ id: ResourceId(() => new TaskNotFound({ message: "No such task." })) })

const Nullable = <A, I>(s: Schema.Schema<A, I>) => Schema.NullOr(s)

/** What the upstream itself said when it refused or failed: its HTTP status, its own code and message. */
export const UpstreamAnswer = Schema.Struct({
  status: Nullable(Schema.Int),
  code: Nullable(Schema.String),
  message: Nullable(Schema.String)
})

/**
 * One attempt as task_attempts keeps it: the channel, the upstream's id, where the attempt is or why it
 * ended (`outcome`), the upstream's own answer that ended it (null when it said nothing) and its last
 * answer about the task (its own JSON).
 */
export const TaskAttempt = Schema.Struct({
  attempt: Schema.Int,
  channel: Schema.String,
  upstream_id: Nullable(Schema.String),
  outcome: Schema.String,
  upstream: Nullable(UpstreamAnswer),
  last_answer: Schema.Unknown,
  /**
   * What the provider counted for the attempt (docs/operating.md, The operator's view of a task): `unit`,
   * `quantity`, `reported` (false: implied by the request), `source` and the provider's own fields; null
   * until the attempt ends.
   */
  usage: Nullable(Schema.Record({ key: Schema.String, value: Schema.Unknown })),
  /** What it cost by the route's `cost`, in the operator's money (like credits); null when none is declared. */
  cost: Nullable(Schema.Number),
  /** Whether the provider bills the attempt, by its own rules; null until the attempt ends. */
  billed: Nullable(Schema.Boolean),
  /**
   * The provider's copy of the task once its group redacted it (docs/operating.md, Data minimisation):
   * `pending` (to be deleted), `deleted`, or `failed`; null when none was asked for.
   */
  provider_copy: Nullable(Schema.Literal("pending", "deleted", "failed")),
  created_at: Schema.Number,
  updated_at: Schema.Number
})

export const AdminTaskView = Schema.Struct({
  object: Schema.Literal("admin.task"),
  task: Schema.Union(VideoTask, ImageTask),
  account: Nullable(AccountDetail),
  ledger: Schema.Array(Schema.Unknown),
  engine: Schema.Struct({
    run_state: Schema.String,
    channel: Schema.String,
    attempt: Schema.Int,
    run_at: Nullable(Schema.Number),
    upstream_id: Nullable(Schema.String),
    upstream_model: Nullable(Schema.String),
    submitted_at: Nullable(Schema.Number),
    polls: Schema.Int,
    lease_owner: Nullable(Schema.String),
    /** When storing its result first failed because object storage was away (ms); null when it never did. */
    store_since: Nullable(Schema.Number),
    /** The spool a `storing` task's result waits in. */
    spool_id: Nullable(Schema.String),
    /** When its prompt, references and metadata were redacted (a group that minimises data); null when kept. */
    redacted_at: Nullable(Schema.Number)
  }),
  channels_tried: Schema.Array(Schema.String),
  attempts: Schema.Array(TaskAttempt)
})

/** The operator's view of a task (admin token only); callers' endpoints never show any of it. */
export class AdminTaskApi extends HttpApiGroup.make("adminTasks")
  .add(
    HttpApiEndpoint.get("getTask", "/admin/v1/tasks/:id").setPath(taskPath).addSuccess(AdminTaskView).addError(
      errors(TaskNotFound)
    )
  )
  .middleware(AdminAuth)
  .annotate(OpenApi.Title, "Administration: tasks")
{}
