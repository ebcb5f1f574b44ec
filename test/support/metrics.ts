import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { raw, type Target } from "./http.ts"

export const METRICS_TOKEN = "mtk_test_0123456789abcdefghijkl"

/** One sample of a scrape: its metric name, labels and value. */
export interface Sample {
  readonly name: string
  readonly labels: Readonly<Record<string, string>>
  readonly value: number
}

/**
 * `GET /metrics` with a token, as Prometheus text (or OpenMetrics when
 * `accept` asks for it): the wire itself (the exposition's text, its content
 * type, the error body of a wrong token), so outside the typed client.
 */
export const scrape = (gw: Target, token: string, accept?: string) =>
  raw(gw, "GET", "/metrics", { key: token, headers: accept === undefined ? {} : { accept } })

/** The samples of an exposition in Prometheus text or OpenMetrics (label values here hold no `,` or `"`). */
export const samplesOf = (text: unknown): Array<Sample> => {
  if (typeof text !== "string") throw new Error(`not an exposition: ${JSON.stringify(text)}`)
  return samplesOfText(text)
}

const samplesOfText = (text: string): Array<Sample> =>
  text.split("\n").filter((line) => line !== "" && !line.startsWith("#")).map((line) => {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line)
    if (match === null) throw new Error(`not a sample line: ${line}`)
    const labels: Record<string, string> = {}
    for (const pair of (match[2] ?? "").split(",").filter(Boolean)) {
      const eq = pair.indexOf("=")
      labels[pair.slice(0, eq)] = JSON.parse(pair.slice(eq + 1)) as string
    }
    return { name: match[1]!, labels, value: Number(match[3]) }
  })

/** The value of the one sample with this name whose labels include `labels`; undefined when there is none. */
export const valueOf = (samples: ReadonlyArray<Sample>, name: string, labels: Record<string, string> = {}) => {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
  if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`)
  return found[0]?.value
}

/** Runs `promtool` with the text as its input or as a file (`check rules FILE`); its exit status and output. */
export const promtool = (args: ReadonlyArray<string>, input?: string) => {
  const run = spawnSync("promtool", [...args], { input, encoding: "utf8" })
  if (run.error !== undefined) throw run.error
  return { status: run.status, output: `${run.stdout}${run.stderr}` }
}

/** A temporary directory for the duration of `f`. */
export const withTempDir = async <A>(f: (dir: string) => Promise<A>): Promise<A> => {
  const dir = mkdtempSync(join(tmpdir(), "metrics-test-"))
  try {
    return await f(dir)
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}

export const writeFile = (path: string, text: string) => writeFileSync(path, text)
