import { type ChildProcess, spawn } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { eventually } from "./eventually.ts"
import { freePort } from "./gateway.ts"

/** A Prometheus server of its own (Debian's `prometheus`), on a free port with a temporary storage directory. */
export interface Prometheus {
  readonly url: string
  /** The vector an instant query answers: each series' labels and value. */
  readonly query: (promql: string) => Promise<Array<{ metric: Record<string, string>; value: number }>>
  /** The scrape targets' health as Prometheus reports it. */
  readonly targets: () => Promise<Array<{ health: string; lastError: string; scrapeUrl: string }>>
  readonly close: () => Promise<void>
}

/** Starts Prometheus scraping `target` (host:port) every second with a bearer token; ready when it answers. */
export const startPrometheus = async (target: string, token: string): Promise<Prometheus> => {
  const dir = mkdtempSync(join(tmpdir(), "prometheus-"))
  writeFileSync(
    join(dir, "prometheus.yml"),
    [
      "global:",
      "  scrape_interval: 1s",
      "  evaluation_interval: 1s",
      "scrape_configs:",
      "  - job_name: gateway",
      "    metrics_path: /metrics",
      "    authorization:",
      "      type: Bearer",
      `      credentials: ${token}`,
      "    static_configs:",
      `      - targets: ["${target}"]`,
      ""
    ].join("\n")
  )
  const port = await freePort()
  const child: ChildProcess = spawn("prometheus", [
    `--config.file=${join(dir, "prometheus.yml")}`,
    `--storage.tsdb.path=${join(dir, "data")}`,
    `--web.listen-address=127.0.0.1:${port}`,
    "--log.level=warn"
  ], { stdio: ["ignore", "ignore", "pipe"] })
  let log = ""
  child.stderr!.on("data", (chunk) => (log += String(chunk)).slice(-4000))
  const url = `http://127.0.0.1:${port}`
  const close = async () => {
    if (child.exitCode === null) {
      const exited = new Promise((done) => child.once("exit", done))
      child.kill("SIGTERM")
      await exited
    }
    rmSync(dir, { recursive: true, force: true })
  }
  try {
    await eventually(
      async () => (await fetch(`${url}/-/ready`).catch(() => undefined))?.ok || undefined,
      `Prometheus ready (${log})`
    )
  } catch (e) {
    await close()
    throw e
  }
  return {
    url,
    query: async (promql) => {
      const res = await fetch(`${url}/api/v1/query?query=${encodeURIComponent(promql)}`)
      const body = await res.json() as {
        status: string
        data: { result: Array<{ metric: Record<string, string>; value: [number, string] }> }
      }
      if (body.status !== "success") throw new Error(`query ${promql}: ${JSON.stringify(body)}`)
      return body.data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }))
    },
    targets: async () => {
      const res = await fetch(`${url}/api/v1/targets`)
      const body = await res.json() as {
        data: { activeTargets: Array<{ health: string; lastError: string; scrapeUrl: string }> }
      }
      return body.data.activeTargets
    },
    close
  }
}
