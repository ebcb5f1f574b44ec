/**
 * A task's `result` with the items of these assets marked expired
 * (docs/api.md, Retention): `expired: true` and `expires_at`, the time they
 * were swept, added to each item; everything else as it was.
 */
export const expiredResult = (result: unknown, assetIds: ReadonlySet<string>, at: number): string => {
  if (result === null || typeof result !== "object") return JSON.stringify(result)
  const marked = Object.fromEntries(
    Object.entries(result as Record<string, unknown>).map(([key, items]) => [
      key,
      Array.isArray(items)
        ? items.map((item) =>
          item !== null && typeof item === "object" && assetIds.has((item as { asset_id?: unknown }).asset_id as string)
            ? { ...item, expired: true, expires_at: at }
            : item
        )
        : items
    ])
  )
  return JSON.stringify(marked)
}
