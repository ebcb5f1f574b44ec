// Runs once: no database
import { readFileSync } from "node:fs"
import { describe, expect, it } from "vitest"
import type { Durations } from "../../src/catalog/contract/Capabilities.ts"
import { configuredFamilies } from "../support/plugins.ts"

/**
 * The model tables the docs show callers (the README's and api.md's video
 * models) against the plugins `config/models.json` loads and the prices it
 * sets: every served model is in them, nothing else is, each row's
 * durations are its models' and its prices theirs, in order. A new family,
 * a renamed model or a changed price fails here until the docs say so.
 */

const families = await configuredFamilies()
const config = JSON.parse(readFileSync("config/models.json", "utf8")) as {
  models: Record<string, { price_per_second?: number; price_per_image?: number }>
}
const video = families.flatMap((f) => f.type === "video" ? f.models : [])
const every = families.flatMap((f) => f.models.map((m) => m.id)).sort()

/** The rows of the markdown table whose header row starts with `header`, as cells. */
const table = (file: string, header: string) => {
  const lines = readFileSync(file, "utf8").split("\n")
  const start = lines.findIndex((l) => l.startsWith(header))
  expect(start, `${file} has a table headed ${header}`).toBeGreaterThan(-1)
  const rows: Array<Array<string>> = []
  for (const line of lines.slice(start + 2)) {
    if (!line.startsWith("|")) break
    rows.push(line.split("|").slice(1, -1).map((c) => c.trim()))
  }
  return rows
}

const idsIn = (cell: string) => [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1]!)
const numbersIn = (cell: string) => [...cell.matchAll(/\d+(?:\.\d+)?/g)].map((m) => Number(m[0]))

/** How a table writes a model's durations: `4–15` for a range, `5, 10` or `5 or 10` for values. */
const durationWords = (d: Durations) =>
  "values" in d ? [d.values.join(", "), d.values.join(" or "), d.values.join(", ").replace(/, (\d+)$/, " or $1")] : [
    `${d.min}–${d.max}`
  ]

describe("the docs' model tables", () => {
  it("the README lists every served model, and each row's durations are its models'", () => {
    const rows = table("README.md", "| Family | Models | Durations | Reference modes |")
    expect(rows.flatMap((r) => idsIn(r[1]!)).sort()).toEqual(every)
    for (const row of rows) {
      for (const id of idsIn(row[1]!)) {
        const model = video.find((m) => m.id === id)
        if (model === undefined) continue
        expect(durationWords(model.durations).some((w) => row[2]!.includes(w)), `${id}: ${row[2]}`).toBe(true)
      }
    }
  })

  it("api.md lists every video model with its durations and, in order, its prices", () => {
    const rows = table("docs/api.md", "| Family | Models | Durations (s) |")
    expect(rows.flatMap((r) => idsIn(r[1]!)).sort()).toEqual(video.map((m) => m.id).sort())
    for (const row of rows) {
      const ids = idsIn(row[1]!)
      for (const id of ids) {
        const model = video.find((m) => m.id === id)!
        expect(durationWords(model.durations).some((w) => row[2]!.includes(w)), `${id}: ${row[2]}`).toBe(true)
      }
      expect(numbersIn(row.at(-1)!), row[0]).toEqual(ids.map((id) => config.models[id]!.price_per_second))
    }
  })
})
