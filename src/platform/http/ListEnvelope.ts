import { Schema } from "effect"

/** The list envelope (docs/api.md, Lists): newest first; `after` = the previous page's `last_id`. */
export const ListEnvelope = <A, I>(item: Schema.Schema<A, I>) =>
  Schema.Struct({
    object: Schema.Literal("list"),
    data: Schema.Array(item),
    has_more: Schema.Boolean,
    first_id: Schema.NullOr(Schema.String),
    last_id: Schema.NullOr(Schema.String)
  })

/** The envelope around one page of items that have an `id`. */
export const listPage = <T extends { readonly id: string }>(data: ReadonlyArray<T>, hasMore: boolean) => ({
  object: "list" as const,
  data,
  has_more: hasMore,
  first_id: data[0]?.id ?? null,
  last_id: data.at(-1)?.id ?? null
})
