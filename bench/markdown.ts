/**
 * bench/RESULTS.md holds one section per benchmark (`## name`), each with a
 * table its benchmark adds rows to. A row goes after the last table line of
 * its own section, so sections stay whole whichever order they are in.
 */
export const addRows = (markdown: string, heading: string, header: string, rows: ReadonlyArray<string>): string => {
  const lines = markdown.replace(/\n*$/, "").split("\n")
  const start = lines.findIndex((l) => l.trim() === `## ${heading}`)
  if (start < 0) {
    return [...lines, "", header.replace(/\n*$/, ""), ...rows].join("\n") + "\n"
  }
  let end = lines.findIndex((l, i) => i > start && l.startsWith("## "))
  if (end < 0) end = lines.length
  let lastRow = -1
  for (let i = start; i < end; i++) if (lines[i]!.startsWith("|")) lastRow = i
  const at = lastRow >= 0 ? lastRow + 1 : end
  return [...lines.slice(0, at), ...rows, ...lines.slice(at)].join("\n") + "\n"
}
