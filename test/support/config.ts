import { cpSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"

/** A copy of `config/` with `edit` applied to one of its JSON files; returns the directory. */
export const configWith = (file: string, edit: (json: any) => void): string => {
  const dir = mkdtempSync(join(tmpdir(), "gw-config-"))
  cpSync("config", dir, { recursive: true })
  const json = JSON.parse(readFileSync(join(dir, file), "utf8"))
  edit(json)
  writeFileSync(join(dir, file), JSON.stringify(json))
  return dir
}

/** Limits high enough that a test driving hundreds of requests is never throttled. */
export const unthrottled = () =>
  configWith("limits.json", (limits) => {
    for (const rate of Object.values(limits.rate_limits) as Array<any>) {
      rate.per_second = 100_000
      rate.burst = 100_000
    }
  })

/** Applies `edit` to another JSON file of a copy made by `configWith`; returns the directory. */
export const alsoWith = (dir: string, file: string, edit: (json: any) => void): string => {
  const json = JSON.parse(readFileSync(join(dir, file), "utf8"))
  edit(json)
  writeFileSync(join(dir, file), JSON.stringify(json))
  return dir
}
