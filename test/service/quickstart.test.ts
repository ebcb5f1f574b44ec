// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import { type ChildProcess, spawn } from "node:child_process"
import { existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from "node:fs"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { eventually } from "../support/eventually.ts"
import { freePort } from "../support/gateway.ts"
import { probeBytes } from "../support/media.ts"
import { NODE_ENTRY, ROOT } from "../support/process.ts"

/**
 * The README's quick start, run as a newcomer runs it: `npm start` in a
 * fresh clone (here a scratch directory whose package.json, dist/,
 * node_modules/ and config/ are the checkout's, so `./config` and `./data`
 * resolve as the README says, and `data/` starts empty), then the marked
 * block of commands in bash from the same directory, on a free port instead
 * of 8080. It must end with a real H.264 MP4 on disk. The block is read from
 * README.md, so the README cannot go stale without this test failing.
 */

const README = readFileSync(join(ROOT, "README.md"), "utf8")
const EXAMPLE = "<!-- example: quickstart "

/** The first fenced block after `from` in the README, and where it ends. */
const blockAfter = (from: number) => {
  const match = /```\w*\n([\s\S]*?)```/.exec(README.slice(from))
  if (match === null) throw new Error("README.md: no code block after the quick start's start")
  return { text: match[1]!, end: from + match.index + match[0].length }
}

/** Everything a process of the test runner's environment could leak into a fresh clone's service. */
const LEAKS =
  /^(DATABASE_URL|ADMIN_TOKEN|CONFIG_DIR|DATA_DIR|ROLE|PUBLIC_BASE_URL|ENCRYPTION_KEY|STORAGE_SIGNING_KEY|S3_.*|HOST|PORT|ALLOW_PRIVATE_TARGETS|OTEL_.*)$/

const cleanEnv = (): Record<string, string> => {
  const env: Record<string, string> = {}
  for (const [k, v] of Object.entries(process.env)) if (v !== undefined && !LEAKS.test(k)) env[k] = v
  return env
}

const exited = (child: ChildProcess) =>
  new Promise<number | null>((done) => {
    if (child.exitCode !== null || child.signalCode !== null) done(child.exitCode)
    else child.once("exit", (code) => done(code))
  })

describe("the README's quick start", { timeout: 180_000 }, () => {
  let dir: string
  let port: number
  let service: ChildProcess
  let serviceOutput = ""

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), "gw-quickstart-"))
    for (const entry of ["package.json", "dist", "node_modules", "config"]) {
      symlinkSync(join(ROOT, entry), join(dir, entry))
    }
    port = await freePort()
    // What `npm start` runs (asserted below), from the clone's directory, with nothing but the README's defaults.
    service = spawn(process.execPath, [NODE_ENTRY], {
      cwd: dir,
      env: { ...cleanEnv(), PORT: String(port) },
      stdio: ["ignore", "pipe", "pipe"]
    })
    service.stdout!.on("data", (chunk) => (serviceOutput += chunk))
    service.stderr!.on("data", (chunk) => (serviceOutput += chunk))
    const up = await eventually(
      async () => {
        if (service!.exitCode !== null) return "exited"
        return (await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.ok, () => false)) && "up"
      },
      "the service answers /healthz",
      { deadlineMs: 90_000, intervalMs: 200 }
    ).catch(() => "silent")
    if (up === "exited") throw new Error(`the service exited ${service.exitCode}:\n${serviceOutput}`)
    if (up === "silent") throw new Error(`the service did not answer /healthz:\n${serviceOutput.slice(-4000)}`)
  }, 120_000)

  afterAll(async () => {
    if (service !== undefined && service.exitCode === null) {
      service.kill("SIGTERM")
      await exited(service)
    }
    if (dir !== undefined) rmSync(dir, { recursive: true, force: true })
  })

  it("starts with the README's two commands, and npm start is the compiled service", () => {
    const section = README.indexOf("## Quick start")
    expect(section).toBeGreaterThan(0)
    expect(blockAfter(section).text).toBe("npm install\nnpm start\n")
    const scripts = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")).scripts
    expect(scripts.start).toBe(`node ${NODE_ENTRY}`)
    // The quick start fits in 40 lines, from its heading to the next section.
    const next = README.indexOf("\n## ", section + 1)
    expect(README.slice(section, next).split("\n").length).toBeLessThanOrEqual(40)
    // A reader meets the video create within the README's first 60 lines.
    const create = README.indexOf("$BASE/v1/video/tasks -H")
    expect(create).toBeGreaterThan(0)
    expect(README.slice(0, create).split("\n").length).toBeLessThanOrEqual(60)
  })

  it("creates an account and its keys, runs a video task and downloads a real H.264 MP4", async () => {
    const at = README.indexOf(EXAMPLE)
    expect(at).toBeGreaterThan(0)
    const block = blockAfter(at).text
    // Only what a fresh machine has: bash, curl and the Node that npm install needed.
    expect(block).not.toMatch(/\b(jq|python3?|perl)\b/)
    expect(block.split("127.0.0.1:8080").length - 1).toBe(1)
    const script = block.replace("127.0.0.1:8080", `127.0.0.1:${port}`)

    // The generated admin token was printed once and stored where the README says.
    expect(existsSync(join(dir, "data", "admin-token"))).toBe(true)
    const token = readFileSync(join(dir, "data", "admin-token"), "utf8").trim()
    expect(serviceOutput.split(token).length - 1).toBe(1)

    // "In a second terminal, in the same directory".
    const bash = spawn("bash", ["-e", "-o", "pipefail", "-c", script], {
      cwd: dir,
      // `node` on PATH is the one running this test.
      env: { ...cleanEnv(), PATH: `${dirname(process.execPath)}:${process.env.PATH}` },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    bash.stdout!.on("data", (chunk) => (output += chunk))
    bash.stderr!.on("data", (chunk) => (output += chunk))
    const code = await exited(bash)
    expect(code, `${output}\n--- service:\n${serviceOutput.slice(-3000)}`).toBe(0)

    const task = JSON.parse(readFileSync(join(dir, "task.json"), "utf8"))
    expect(task.status).toBe("succeeded")
    expect(output).toContain(`${task.id} succeeded`)
    expect(task.result.videos[0].url_auth).toBe("none")

    const probed = await probeBytes(readFileSync(join(dir, "boat.mp4")))
    expect(probed.formatName).toContain("mp4")
    expect(probed.video).toMatchObject({ codec: "h264", width: 854, height: 480 })
    expect(probed.audio?.codec).toBe("aac")
    expect(probed.durationS).toBeGreaterThan(3.9)
    expect(probed.durationS).toBeLessThan(4.2)
  })
})
