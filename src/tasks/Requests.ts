import { HttpApiSchema } from "@effect/platform"
import { Schema } from "effect"
import { DEFAULT_PAGE_LIMIT, PageLimit, UnixSeconds } from "../platform/http/ListQuery.ts"
import { TaskKind, TaskStatus } from "./Task.ts"

export { DEFAULT_PAGE_LIMIT, PageLimit, UnixSeconds }

/**
 * Request shapes that the contract leaves out of its endpoints because the
 * handlers read them by hand (so a bad one gets the spec's error body naming
 * the field). The handlers decode with these same schemas where they can, and
 * the typed client (`src/ClientApi.ts`) adds them to the contract's endpoints, so
 * both sides share one definition.
 */

/**
 * Optional headers of the create endpoints: `Idempotency-Key` (spec: at most
 * 128 characters) and `Cancel-After` (the deadline; CancelAfter.ts checks it).
 */
export const IdempotencyHeaders = Schema.Struct({
  "idempotency-key": Schema.optional(Schema.String.pipe(Schema.minLength(1), Schema.maxLength(128))),
  "cancel-after": Schema.optional(Schema.String)
})

/** The spec's task list query parameters; `operations` are the values the task kind takes. */
const taskListParams = <const O extends ReadonlyArray<string>>(...operations: O) =>
  Schema.Struct({
    status: Schema.optional(TaskStatus),
    operation: Schema.optional(Schema.Literal(...operations)),
    client_reference_id: Schema.optional(Schema.String),
    created_after: Schema.optional(UnixSeconds),
    created_before: Schema.optional(UnixSeconds),
    after: Schema.optional(Schema.String.pipe(Schema.minLength(1))),
    limit: Schema.optional(PageLimit)
  })

export const VideoTaskListParams = taskListParams("generation")
export const ImageTaskListParams = taskListParams("generation", "edit")

/** An id filter: printable ASCII, so nothing PostgreSQL refuses (NUL) reaches it; an unknown id simply matches nothing. */
const IdParam = Schema.String.pipe(Schema.pattern(/^[\x21-\x7e]{1,200}$/, { message: () => "expected an id" }))

/** `GET /v1/assets` (docs/api.md, Assets). */
export const AssetListParams = Schema.Struct({
  task_id: Schema.optional(IdParam),
  kind: Schema.optional(TaskKind),
  created_after: Schema.optional(UnixSeconds),
  created_before: Schema.optional(UnixSeconds),
  after: Schema.optional(IdParam),
  limit: Schema.optional(PageLimit)
})

const UrlRef = Schema.Struct({ url: Schema.String })
const JsonObject = Schema.Record({ key: Schema.String, value: Schema.Unknown })

/** `POST /v1/image/tasks`, JSON form (spec: Image request fields); the model's table decides the values. */
export const ImageCreateRequest = Schema.Struct({
  model: Schema.String,
  operation: Schema.Literal("generation", "edit"),
  input: Schema.Struct({
    prompt: Schema.String,
    images: Schema.optional(Schema.Array(UrlRef)),
    mask: Schema.optional(UrlRef)
  }),
  output: Schema.optional(Schema.Struct({
    count: Schema.optional(Schema.Int),
    size: Schema.optional(Schema.String.annotations({ description: "<width>x<height>" })),
    quality: Schema.optional(Schema.String),
    format: Schema.optional(Schema.String)
  })),
  client_reference_id: Schema.optional(Schema.String),
  metadata: Schema.optional(JsonObject),
  provider_options: Schema.optional(Schema.Record({ key: Schema.String, value: JsonObject }))
})
export type ImageCreateRequest = typeof ImageCreateRequest.Type

/**
 * `POST /v1/image/tasks`, multipart form (edit only): `model`, `operation`,
 * `prompt`, repeatable `image` files, an optional `mask` file, `size`,
 * `quality`, `output_format`. A client sends it as `FormData`.
 */
export const ImageEditFields = Schema.Struct({
  model: Schema.String,
  operation: Schema.Literal("edit"),
  prompt: Schema.String,
  size: Schema.optional(Schema.String),
  quality: Schema.optional(Schema.String),
  output_format: Schema.optional(Schema.String)
})
export const ImageEditForm = HttpApiSchema.Multipart(ImageEditFields)
