import { Schema } from "effect"

/** What a usage row may be grouped by; each key is a column of the answer. */
export const GroupKey = Schema.Literal("day", "account", "model", "channel")
export type GroupKey = typeof GroupKey.Type

/** The keys in the order rows are sorted and columns written, whatever order the query named them in. */
export const KEY_ORDER: ReadonlyArray<GroupKey> = GroupKey.literals

/** The longest window one report may cover: a year, so a report stays bounded by its index. */
export const MAX_WINDOW_S = 366 * 86_400

/** A report's rows per page: JSON by default 100, CSV 10,000 (a spreadsheet takes one file). */
export const PAGE = { json: 100, csv: 10_000, max: 10_000 } as const

/** A report's window, grouping and page, as the handler decoded them. */
export interface UsageQuery {
  readonly from: number
  readonly to: number
  readonly groupBy: ReadonlyArray<GroupKey>
  readonly limit: number
  /** The key values of the previous page's last row. */
  readonly after: ReadonlyArray<string | number> | undefined
}

/** A page's cursor: the last row's key values, opaque to callers (base64url of their JSON). */
export const encodeCursor = (keys: ReadonlyArray<string | number>) =>
  btoa(JSON.stringify(keys)).replaceAll("+", "-").replaceAll("/", "_").replace(/=+$/, "")

/** The key values a cursor holds, when it holds as many as the grouping has keys; undefined otherwise. */
export const decodeCursor = (cursor: string, arity: number): ReadonlyArray<string | number> | undefined => {
  try {
    const keys: unknown = JSON.parse(atob(cursor.replaceAll("-", "+").replaceAll("_", "/")))
    return Array.isArray(keys) && keys.length === arity &&
        keys.every((k) => typeof k === "string" || (typeof k === "number" && Number.isInteger(k)))
      ? keys as ReadonlyArray<string | number>
      : undefined
  } catch {
    return undefined
  }
}

/** A UTC day number as a date (`2026-11-28`). */
export const dateOf = (day: number) => new Date(day * 86_400_000).toISOString().slice(0, 10)
