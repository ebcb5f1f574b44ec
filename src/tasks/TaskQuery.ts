import { Effect, Schema } from "effect"
import { TaskStatus } from "./Task.ts"
import type { ListFilter } from "./TaskStore.ts"
import { Limit, readQuery, UnixSeconds } from "../platform/http/ListQuery.ts"

/** The list query parameters of the spec. */
const listParams = (operations: ReadonlyArray<string>) =>
  Schema.Struct({
    status: Schema.optional(TaskStatus),
    operation: Schema.optional(Schema.Literal(...(operations as [string, ...Array<string>]))),
    client_reference_id: Schema.optional(Schema.String),
    created_after: Schema.optional(UnixSeconds),
    created_before: Schema.optional(UnixSeconds),
    after: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
    limit: Limit
  })

export const readListFilter = (operations: ReadonlyArray<string>) =>
  Effect.map(readQuery(listParams(operations)), (p) => ({
    status: p.status,
    operation: p.operation,
    clientReferenceId: p.client_reference_id,
    createdAfter: p.created_after,
    createdBefore: p.created_before,
    after: p.after,
    limit: p.limit
  } satisfies ListFilter))
