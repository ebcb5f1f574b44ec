/**
 * A table as CSV (RFC 4180): a header line, then one line per row, CRLF
 * between lines. A field holding a comma, a quote or a line break is quoted,
 * its quotes doubled; a text field a spreadsheet would read as a formula
 * (starting with `=`, `+`, `-`, `@`, a tab or a carriage return) is prefixed
 * with `'` so opening the file runs nothing (OWASP, CSV injection). Numbers
 * are written as they are, negative ones included.
 */
export const toCsv = (
  columns: ReadonlyArray<string>,
  rows: ReadonlyArray<object>
): string => {
  const field = (value: unknown) => {
    if (value === null || value === undefined) return ""
    if (typeof value === "number") return String(value)
    let text = String(value)
    if (/^[=+\-@\t\r]/.test(text)) text = `'${text}`
    return /[",\r\n]/.test(text) ? `"${text.replaceAll("\"", "\"\"")}"` : text
  }
  return [
    columns.join(","),
    ...rows.map((row) => columns.map((c) => field((row as Record<string, unknown>)[c])).join(","))
  ].join("\r\n") + "\r\n"
}
