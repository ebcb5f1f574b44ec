import { Effect, Schema } from "effect"
import { TaskStatus } from "../domain/Task.ts"
import type { ListFilter } from "../services/TaskStore.ts"
import { readQuery } from "./Query.ts"

const UnixSeconds = Schema.NumberFromString.pipe(Schema.int(), Schema.nonNegative())

/** The list query parameters of the spec; anything else is refused so a typo is not silently ignored. */
const listParams = (operations: ReadonlyArray<string>) =>
  Schema.Struct({
    status: Schema.optional(TaskStatus),
    operation: Schema.optional(Schema.Literal(...(operations as [string, ...Array<string>]))),
    client_reference_id: Schema.optional(Schema.String),
    created_after: Schema.optional(UnixSeconds),
    created_before: Schema.optional(UnixSeconds),
    after: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
    limit: Schema.optionalWith(Schema.NumberFromString.pipe(Schema.int(), Schema.between(1, 100)), {
      default: () => 20
    })
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
