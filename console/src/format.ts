/** Display helpers: times in the viewer's locale, sizes in binary units, credits with their sign. */

export const dateTime = (unixSeconds: number | null | undefined) =>
  unixSeconds === null || unixSeconds === undefined ? "—" : new Date(unixSeconds * 1000).toLocaleString()

export const bytes = (n: number | null | undefined) => {
  if (n === null || n === undefined) return "—"
  if (n < 1024) return `${n} B`
  const units = ["KiB", "MiB", "GiB"]
  let value = n / 1024
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`
}

export const seconds = (
  ms: number | null | undefined
) => (ms === null || ms === undefined ? "—" : `${(ms / 1000).toFixed(ms % 1000 === 0 ? 0 : 2)} s`)

export const credits = (n: number) => (n > 0 ? `+${n}` : String(n))

/** "W×H", "12 s" or both, whichever the file has. */
export const shape = (item: { width?: number | null; height?: number | null; duration_ms?: number | null }) => {
  const parts: Array<string> = []
  if (item.width && item.height) parts.push(`${item.width}×${item.height}`)
  if (item.duration_ms !== null && item.duration_ms !== undefined) parts.push(seconds(item.duration_ms))
  return parts.length === 0 ? "—" : parts.join(", ")
}

/** A datetime-local input's value as Unix seconds in a query string (the list API's time filters), or undefined. */
export const toUnix = (local: string) => local === "" ? undefined : String(Math.floor(new Date(local).getTime() / 1000))
