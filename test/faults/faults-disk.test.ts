import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from "node:fs"
import { join, relative } from "node:path"
import { afterEach, describe, expect, it } from "vitest"
import { createAccount } from "../support/adminApi.ts"
import { checkBooks } from "../support/books.ts"
import { alsoWith, configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { expectError, raw } from "../support/http.ts"
import { type Installation, installation, withDatabase } from "../support/installation.ts"
import { probeBytes } from "../support/media.ts"
import { kill, type Service, stop, waitForLog } from "../support/process.ts"
import { createVideoTask, untilStatuses, videoTaskStates } from "../support/taskRuns.ts"
import { resultOf, videoRequest } from "../support/tasks.ts"
import { createSessions, image, makeImage } from "../support/uploads.ts"

/**
 * The local object store's disk fills up, then is freed, the service as a
 * real process on each database. `DATA_DIR/objects` is a small tmpfs of its
 * own (mounted by the test, which runs as root on CI's machine), filled to
 * the last byte. Writes fail cleanly: nothing partial is ever stored or
 * served, no temporary file is left, callers get 503 `storage_unavailable`.
 * The tasks whose results could not be written wait, in the spool on
 * PGlite; on PostgreSQL the spool is on a full tmpfs too, so the runs keep
 * their results themselves. Once space is freed every task succeeds.
 */

const GRANTED = { wallet: 1000, subscription: 0 }
const TASKS = 6
const mounts: Array<string> = []
let inst: Installation | undefined
let service: Service | undefined

const mount = (dir: string, size: string) => {
  mkdirSync(dir, { recursive: true })
  execFileSync("mount", ["-t", "tmpfs", "-o", `size=${size}`, "tmpfs", dir])
  mounts.push(dir)
}

/** Fills the file system holding `dir` to the last byte; the filler file's path. */
const fill = (dir: string) => {
  const filler = join(dir, "filler")
  // dd stops at ENOSPC with a non-zero status: the disk is then full.
  try {
    execFileSync("dd", ["if=/dev/zero", `of=${filler}`, "bs=64k"], { stdio: "ignore" })
  } catch {
    // expected
  }
  return filler
}

/** Every file under `dir` (relative paths), the filler aside. */
const filesUnder = (dir: string): Array<string> =>
  existsSync(dir)
    ? readdirSync(dir, { recursive: true, encoding: "utf8" })
      .filter((name) => statSync(join(dir, name)).isFile() && name !== "filler")
      .map((name) => relative(dir, join(dir, name)))
    : []

afterEach(async (context) => {
  if (context.task.result?.state === "fail" && service !== undefined) {
    const notable = service.output().split("\n").filter((l) => !l.includes("\"message\":\"request\"")).slice(-60)
    console.error(notable.join("\n"))
  }
  if (service !== undefined) await kill(service)
  for (const dir of mounts.splice(0).reverse()) execFileSync("umount", ["-l", dir])
  await inst?.close()
})

describe(`the local store's disk full, then freed (${backend})`, { timeout: 300_000 }, () => {
  it("writes fail cleanly, nothing partial is served, callers get 503; freed, every task succeeds", async () => {
    inst = await installation()
    const objects = join(inst.dataDir, "objects")
    mount(objects, "64m")
    // On PostgreSQL the spool is on a full disk too: the results wait in their runs instead.
    const spoolFull = inst.db.url !== undefined
    if (spoolFull) mount(join(inst.dataDir, "spool"), "1m")
    const config = alsoWith(
      configWith("models.json", (models) => {
        models.channels.sandbox = { ...models.channels.sandbox, concurrency: TASKS }
      }),
      "limits.json",
      (limits) => {
        limits.engine = { poll_interval_ms: 200, heartbeat_s: 1, lease_s: 10 }
        for (const rate of Object.values(limits.rate_limits) as Array<any>) rate.burst = rate.per_second = 10_000
      }
    )
    service = await inst.serve("all", config)
    const acct = await createAccount(inst.target, { name: "disk", wallet_credits: GRANTED.wallet })
    // One result stored before the disk fills: it must stay readable throughout.
    const earlyId = await createVideoTask(inst.target, acct.model.key, videoRequest())
    await untilStatuses(inst.target, acct.resource.key, [earlyId], (s) => s[0] === "succeeded", 60_000)
    const [early] = await videoTaskStates(inst.target, acct.resource.key, [earlyId])
    // An upload session handed out before the disk fills: its PUT comes after.
    const png = Buffer.from(await makeImage("png", "320x240"))
    const session = (await createSessions(inst.target, acct.resource.key, [image(png)]))[0]!
    const fillers = [fill(objects), ...(spoolFull ? [fill(join(inst.dataDir, "spool"))] : [])]

    const waiting = await Promise.all(
      Array.from({ length: TASKS }, () => createVideoTask(inst!.target, acct.model.key, videoRequest()))
    )
    await waitForLog(service, (l) => JSON.stringify(l).includes("\"fault\":\"full\""), 120_000)
    await waitForLog(
      service,
      (l) =>
        l.message ===
          (spoolFull
            ? "the spool cannot keep the result; this run holds it and tries again"
            : "the result waits in the spool for object storage"),
      120_000
    )

    // Callers: a pre-upload cannot be written, 503 and nothing stored; what was stored is still served.
    const preUpload = await raw(inst.target, "POST", "/v1/image/uploads/base64", {
      key: acct.resource.key,
      json: { images: [`data:image/png;base64,${png.toString("base64")}`] }
    })
    expectError(preUpload, 503, "storage_unavailable", "api_error")
    expect(Number(preUpload.headers.get("retry-after"))).toBeGreaterThan(0)
    // The local store's own PUT URL: refused with 503 too, nothing stored.
    const put = await fetch(session.upload_url, { method: "PUT", headers: session.headers, body: png })
    expect(put.status).toBe(503)
    expect((await put.json()).error.code).toBe("storage_unavailable")
    expect(put.headers.get("retry-after")).not.toBeNull()
    const served = await fetch(resultOf(early).videos[0].url)
    expect(served.status).toBe(200)
    expect((await probeBytes(new Uint8Array(await served.arrayBuffer()))).video?.codec).toBe("h264")
    // Nothing partial: no result object of the waiting tasks (retries write into ~tmp/ meanwhile; what is
    // left there once they are over is checked below).
    for (const id of waiting) expect(filesUnder(join(objects, "results", id))).toEqual([])
    expect((await videoTaskStates(inst.target, acct.resource.key, waiting)).map((t) => t.status))
      .toEqual(waiting.map(() => "in_progress"))

    for (const filler of fillers) rmSync(filler)
    await untilStatuses(inst.target, acct.resource.key, waiting, (s) => s.every((x) => x === "succeeded"), 180_000)
    for (const task of await videoTaskStates(inst.target, acct.resource.key, waiting)) {
      const bytes = new Uint8Array(await (await fetch(resultOf(task).videos[0].url)).arrayBuffer())
      expect((await probeBytes(bytes)).video?.codec, task.id).toBe("h264")
    }
    // No temporary file was left by all the writes the full disk cut short.
    expect(filesUnder(join(objects, "~tmp"))).toEqual([])
    await stop(service)
    await withDatabase(
      { dbUrl: inst.db.url, dataDir: inst.dataDir },
      (rows) =>
        checkBooks(rows, acct.id, GRANTED, new Map([early.id, ...waiting].map((id) => [id, "succeeded" as const])))
    )
  })
})
