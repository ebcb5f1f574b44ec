import { type ChildProcess, execFileSync, spawn } from "node:child_process"
import { existsSync } from "node:fs"
import { join, resolve } from "node:path"
import { eventually } from "./eventually.ts"

/**
 * The service as real child processes: `npm start` or `node dist/src/main.js`
 * (what `npm start` runs: the compiled service, built by `npm run build`;
 * vitest's global setup, test/support/build.ts, builds it before every run)
 * with an environment of the test's choosing, its output captured, stopped
 * by signals. Shared by the process-level tests.
 */

export const ROOT = resolve(".")

/** One line of the service's JSON log (`Logger.json`). */
export interface LogLine {
  readonly message: unknown
  readonly logLevel: string
  readonly timestamp: string
  readonly annotations: Record<string, any>
}

export interface Service {
  readonly child: ChildProcess
  /** How it was started (see `start`). */
  readonly via: "npm" | "node"
  /** Started in a process group of its own (the service is a descendant, not the child): `kill` signals the group. */
  readonly group: boolean
  readonly port: number
  /** Everything written to stdout and stderr so far. */
  readonly output: () => string
  /** The JSON log lines written so far (other output is skipped). */
  readonly logs: () => Array<LogLine>
  readonly exited: Promise<number | null>
}

/** Variables of the test runner's own environment that must not leak into a child. */
const PRIVATE = ["DATABASE_URL", "ADMIN_TOKEN", "CONFIG_DIR", "DATA_DIR", "ROLE", "PUBLIC_BASE_URL"]

/**
 * The runtime the process-level tests start the service on: `RUNTIME=deno`
 * runs it on Deno (`src/runtime/deno/main.ts`, the `deno` dev dependency's
 * binary), anything else on Node. `DENO_ENTRY` names another entry point for
 * Deno (e.g. `src/main.ts`, the Node server under Deno's Node compatibility).
 */
export const RUNTIME: "node" | "deno" = process.env.RUNTIME === "deno" ? "deno" : "node"
/**
 * The Deno binary itself, not `node_modules/.bin/deno`: that is the package's
 * Node shim, which runs the binary as a child, so a signal sent to it would
 * never reach the service (and SIGKILL would leave the service running).
 * The shim puts the binary in place on its first run, when npm's install
 * script (not allowed here) has not.
 */
const DENO = join(ROOT, "node_modules/deno/deno")
if (RUNTIME === "deno" && !existsSync(DENO)) execFileSync(join(ROOT, "node_modules/.bin/deno"), ["--version"])
const DENO_ENTRY = process.env.DENO_ENTRY ?? "src/runtime/deno/main.ts"
/** The compiled service, what `npm start` runs on Node. */
export const NODE_ENTRY = "dist/src/main.js"

/**
 * Starts the service: with `npm start` as an operator would (npm runs
 * `node dist/src/main.js` in a child of its own: `kill` below kills the
 * whole group); or as `node dist/src/main.js` itself (`node`), so the
 * exit code and every signal are the service's own. On Deno, `npm` is
 * `npm run start:deno`; `node` runs `deno run` directly, so the service is
 * the child itself.
 */
export const start = (env: Record<string, string>, port: number, via: "npm" | "node" = "node"): Service => {
  const [command, args] = RUNTIME === "deno"
    ? via === "npm" ? ["npm", ["run", "start:deno", "--silent"]] : [DENO, ["run", "--allow-all", DENO_ENTRY]]
    : via === "npm"
    ? ["npm", ["start", "--silent"]]
    : [process.execPath, [NODE_ENTRY]]
  const group = via === "npm"
  const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !PRIVATE.includes(k)))
  const child = spawn(command, args as Array<string>, {
    cwd: ROOT,
    env: { ...clean, HOST: "127.0.0.1", PORT: String(port), ...env },
    stdio: ["ignore", "pipe", "pipe"],
    // npm runs the service in a child: a process group of its own lets `kill` reach it.
    detached: group
  })
  let output = ""
  child.stdout!.on("data", (chunk) => (output += chunk))
  child.stderr!.on("data", (chunk) => (output += chunk))
  const exited = new Promise<number | null>((done) => child.once("exit", (code) => done(code)))
  const logs = () =>
    output.split("\n").flatMap((line) => {
      if (!line.startsWith("{")) return []
      try {
        return [JSON.parse(line) as LogLine]
      } catch {
        return []
      }
    })
  return { child, via, group, port, output: () => output, logs, exited }
}

/** Polls until the service answers or the deadline passes; returns whether it answered. */
export const waitForHealth = (service: Service, deadlineMs: number) =>
  eventually(
    async () => {
      if (hasExited(service)) return "exited"
      const ok = await fetch(`http://127.0.0.1:${service.port}/healthz`).then((r) => r.status === 200, () => false)
      return ok && "answered"
    },
    "the service answers /healthz",
    { deadlineMs }
  ).then((outcome) => outcome === "answered", () => false)

const hasExited = (service: Service) => service.child.exitCode !== null || service.child.signalCode !== null

/** Waits for a log line that satisfies `match`; throws with the output when the deadline passes or the process exits. */
export const waitForLog = async (service: Service, match: (line: LogLine) => boolean, deadlineMs: number) => {
  // `null`: the process exited without the line.
  const found = await eventually(
    () => service.logs().find(match) ?? (hasExited(service) ? null : undefined),
    "a matching log line",
    { deadlineMs }
  ).catch(() => null)
  if (found !== null) return found
  throw new Error(
    `no matching log line (exit ${service.child.exitCode}/${service.child.signalCode}); output:\n${
      service.output().slice(-4000)
    }`
  )
}

/**
 * SIGTERM and wait for the exit. npm does not relay signals, so its whole group is signalled. A stopped process is continued first, or it
 * would never see the signal.
 */
export const stop = async (service: Service) => {
  if (service.child.exitCode !== null || service.child.signalCode !== null) return
  if (service.via === "npm") process.kill(-service.child.pid!, "SIGTERM")
  else {
    service.child.kill("SIGCONT")
    service.child.kill("SIGTERM")
  }
  await service.exited
}

/**
 * SIGKILL: the service gets no chance to release its claims or close its database. Started through
 * npm, the whole process group is killed, the service with its parents; signalling the
 * parent alone would leave the service running, orphaned.
 */
export const kill = async (service: Service) => {
  if (service.child.exitCode !== null || service.child.signalCode !== null) return
  if (!service.group) service.child.kill("SIGKILL")
  else process.kill(-service.child.pid!, "SIGKILL")
  await service.exited
}
