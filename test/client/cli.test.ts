import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { commandHelp, helpContext } from "../../src/cli/Cli.ts"
import { type CommandHelp, leaves, usageToken, WIDTH } from "../../src/cli/Help.ts"
import { createAccount } from "../support/adminApi.ts"
import { docExample, MTG, mtg, mtgCommands, mtgEnv, mtgInProcess, run } from "../support/cli.ts"
import { configWith } from "../support/config.ts"
import { backend } from "../support/database.ts"
import { freePort, startGateway, type TestGateway } from "../support/gateway.ts"
import { probeBytes } from "../support/media.ts"
import { frameAt } from "../support/sandboxMedia.ts"
import { makeAudio, makeImage, makeVideo } from "../support/uploads.ts"

/**
 * `mtg` run as a process (bin/mtg.mjs, what `npx mtg` starts) against a
 * gateway with its engine (ROLE=all), polling every second
 * (`poll_interval_s` 1, the Retry-After the CLI follows). docs/cli.md's
 * example is run as written, in a directory holding the files it names.
 */

let gw: TestGateway
let env: Record<string, string>
let dir: string

beforeAll(async () => {
  const config = configWith("limits.json", (limits) => {
    limits.poll_interval_s = 1
    limits.engine = { poll_interval_ms: 200 }
  })
  const [started, png, mp4, wav] = await Promise.all([
    startGateway({ ROLE: "all", CONFIG_DIR: config }),
    makeImage("png", "320x240"),
    makeVideo(4, { audio: true }),
    makeAudio("wav", 3)
  ])
  gw = started
  env = mtgEnv(gw.url, await createAccount(gw, { name: "cli", wallet_credits: 1000 }))
  dir = mkdtempSync(join(tmpdir(), "gw-cli-"))
  writeFileSync(join(dir, "boat.png"), png)
  writeFileSync(join(dir, "pond.mp4"), mp4)
  writeFileSync(join(dir, "birds.wav"), wav)
})
afterAll(async () => {
  await gw?.close()
  if (dir) rmSync(dir, { recursive: true, force: true })
})

const json = (text: string) => JSON.parse(text)
const filesIn = (path: string) => readdirSync(path).sort()

describe(`mtg against a running gateway (${backend})`, () => {
  it(
    "runs docs/cli.md's example: a famS media-mode task from a local PNG, MP4 and WAV, waited for and downloaded as a playable MP4",
    async () => {
      const commands = mtgCommands(docExample("docs/cli.md", "cli"))
      expect(commands.some((c) => c.includes("--mode media") && c.includes("--out results"))).toBe(true)
      const outputs: Array<string> = []
      for (const command of commands) {
        const result = await run("bash", ["-c", command.replace(/^npx mtg /, `"${process.execPath}" "${MTG}" `)], {
          env,
          cwd: dir
        })
        expect(result.code, `${command}\n${result.stderr}`).toBe(0)
        outputs.push(result.stdout)
      }
      const [models, video, edit, list, assets] = outputs as [string, string, string, string, string]
      expect(models).toContain("provy-famS-2.5-480p")
      const videoTask = /^(task_\w+) succeeded$/m.exec(video)![1]!
      expect(/^(task_\w+) succeeded$/m.test(edit)).toBe(true)
      expect(list).toContain(videoTask)
      expect(assets).toContain(videoTask)

      const results = filesIn(join(dir, "results"))
      expect(results.filter((f) => f.endsWith(".part"))).toEqual([])
      const mp4 = results.find((f) => f.endsWith(".mp4"))!
      expect(video).toContain(join("results", mp4))
      const probed = await probeBytes(readFileSync(join(dir, "results", mp4)))
      expect(probed.formatName).toContain("mp4")
      expect(probed.video?.codec).toBe("h264")
      expect(probed.audio?.codec).toBe("aac")
      expect(Math.abs(probed.durationS - 4)).toBeLessThan(0.5)
      // Playable: a frame in the middle decodes to a whole picture.
      const frame = await frameAt(join(dir, "results", mp4), 2)
      expect(frame.length).toBe(probed.video!.width * probed.video!.height * 3)
      const png = results.find((f) => f.endsWith(".png"))!
      expect((await probeBytes(readFileSync(join(dir, "results", png)))).formatName).toBe("png_pipe")
    },
    300_000
  )

  it(
    "--json prints documents a script can parse: create, replay, watch with download, list, upload and assets",
    async () => {
      const create = [
        "video",
        "create",
        "--model",
        "provy-famS-2.0-480p",
        "--prompt",
        "a quiet harbour",
        "--duration",
        "4",
        "--no-audio",
        "--metadata",
        "{\"run\":\"json\"}",
        "--idempotency-key",
        "cli-json-1",
        "--json"
      ]
      const first = await mtg(create, { env })
      expect(first.code, first.stderr).toBe(0)
      const created = json(first.stdout)
      expect(created.files).toEqual([])
      expect(created.task).toMatchObject({ object: "video.task", status: "queued", metadata: { run: "json" } })
      const again = json((await mtg(create, { env })).stdout)
      expect(again.task.id).toBe(created.task.id)

      const out = join(dir, "json-out")
      const watched = await mtg(["tasks", "watch", created.task.id, "--out", out, "--json"], { env })
      expect(watched.code, watched.stderr).toBe(0)
      const finished = json(watched.stdout)
      expect(finished.task.status).toBe("succeeded")
      expect(finished.files).toEqual([join(out, filesIn(out)[0]!)])
      expect((await probeBytes(readFileSync(finished.files[0]))).audio).toBeUndefined()
      // Plain progress lines went to stderr, leaving stdout one JSON document.
      expect(watched.stderr).toMatch(new RegExp(`${created.task.id} succeeded 100%`))

      const listed = json((await mtg(["tasks", "list", "--limit", "5", "--json"], { env })).stdout)
      expect(listed.object).toBe("list")
      expect(listed.data.map((t: any) => t.id)).toContain(created.task.id)

      const uploaded = json((await mtg(["upload", "boat.png", "birds.wav", "--json"], { env, cwd: dir })).stdout)
      expect(uploaded.data.map((u: any) => [u.kind, u.mime_type])).toEqual([["image", "image/png"], [
        "audio",
        "audio/wav"
      ]])
      expect(uploaded.data[0].url.startsWith(gw.url)).toBe(true)

      const assetId = finished.task.result.videos[0].asset_id
      const asset = json((await mtg(["assets", "get", assetId, "--json"], { env })).stdout)
      expect(asset).toMatchObject({ id: assetId, object: "asset", task_id: created.task.id })
      const downloaded = json(
        (await mtg(["assets", "download", assetId, "--out", join(dir, "asset-out"), "--json"], { env })).stdout
      )
      expect(readFileSync(downloaded.file).length).toBe(asset.size_bytes)
      expect(json((await mtg(["assets", "delete", assetId, "--json"], { env })).stdout)).toEqual({
        id: assetId,
        object: "asset.deleted",
        deleted: true
      })
      const gone = await mtg(["assets", "get", assetId], { env })
      expect(gone.code).toBe(3)
      expect(gone.stderr).toContain("asset_not_found")
    },
    300_000
  )

  it("a failed task exits 1 with its error code on stderr and the failed task as JSON on stdout", async () => {
    const result = await mtg([
      "video",
      "create",
      "--model",
      "provy-famS-2.0-480p",
      "--prompt",
      "doomed",
      "--duration",
      "4",
      "--provider-options",
      "{\"sandbox\":{\"outcome\":\"fail\"}}",
      "--wait",
      "--json"
    ], { env })
    expect(result.code).toBe(1)
    expect(result.stderr).toMatch(/error: video_task_failed: .*retryable: false/)
    const printed = json(result.stdout)
    expect(printed.task.status).toBe("failed")
    expect(printed.task.error.code).toBe("video_task_failed")
  }, 120_000)

  it("usage errors exit 2; API and network errors exit 3, printed with the spec's code", async () => {
    const base = ["video", "create", "--model", "provy-famS-2.0-480p", "--prompt", "p", "--duration", "4"]
    const closed = `http://127.0.0.1:${await freePort()}`
    const { MTG_MODEL_TOKEN: _token, ...withoutToken } = env
    // As processes: the exit codes a shell sees.
    const [badFlag, noToken, wrongKind, unknownModel, unreachable] = await Promise.all([
      mtg([...base, "--bogus"], { env }),
      mtg(base, { env: withoutToken }),
      mtg([...base, "--video", "boat.png"], { env, cwd: dir }),
      mtg(["video", "create", "--model", "provq-nothing", "--prompt", "p", "--duration", "4"], { env }),
      mtg(base, { env: { ...env, MTG_BASE_URL: closed } })
    ])
    expect([badFlag, noToken, wrongKind].map((r) => r.code)).toEqual([2, 2, 2])
    expect(badFlag.stderr).toContain("--bogus")
    expect(noToken.stderr).toContain("MTG_MODEL_TOKEN")
    expect(wrongKind.stderr).toMatch(/boat\.png: --video takes video files; this is image\/png/)
    expect(unknownModel.code).toBe(3)
    expect(unknownModel.stderr).toMatch(/error: unsupported_video_model: .*\(HTTP 400, request req_/)
    expect(unreachable.code).toBe(3)
    expect(unreachable.stderr).toContain("error: network_error")
    // In this process, the same code path: more usage errors, found before anything is sent.
    const here = (args: Array<string>) => mtgInProcess([...base, ...args], env)
    const notInteger = await mtgInProcess(
      ["video", "create", "--model", "m", "--prompt", "p", "--duration", "four"],
      env
    )
    const missingFile = await here(["--image", join(dir, "missing.png")])
    const lastFrame = await here(["--mode", "media", "--image", "x.png", "--last-frame", "y.png"])
    const badJson = await here(["--provider-options", "{sandbox"])
    expect([notInteger, missingFile, lastFrame, badJson].map((r) => r.code)).toEqual([2, 2, 2, 2])
    expect(missingFile.stderr).toContain("missing.png: no such file")
    expect(lastFrame.stderr).toContain("--last-frame is for frame mode")
    expect(badJson.stderr).toContain("--provider-options must be a JSON object")
  }, 180_000)

  it(
    "every command's --help: rendered from the definitions, described in words, at most 100 columns, with the whole command path and optional flags bracketed",
    async () => {
      const PLACEHOLDERS = [
        "A user-defined piece of text",
        "A true or false value",
        "An integer",
        "One of the following",
        "This setting is optional",
        "This option",
        "$ "
      ]
      const all: Array<CommandHelp> = []
      const walk = (c: CommandHelp): void => {
        all.push(c)
        c.subcommands.forEach(walk)
      }
      walk(commandHelp)
      expect(all.map((c) => c.path.join(" "))).toEqual(
        expect.arrayContaining(["mtg", "mtg video create", "mtg tasks list"])
      )
      const common = new Set(helpContext.common.map((f) => f.names[0]))
      for (const command of all) {
        const name = command.path.join(" ")
        const { code, stdout } = await mtgInProcess([...command.path.slice(1), "--help"])
        expect(code, name).toBe(0)
        for (const placeholder of PLACEHOLDERS) expect(stdout, `${name}: ${placeholder}`).not.toContain(placeholder)
        const tooWide = stdout.split("\n").filter((line) => line.length > WIDTH)
        expect(tooWide, name).toEqual([])
        expect(command.description, name).not.toBe("")
        expect(stdout, name).toContain(`\nUSAGE\n  ${name} `)
        if (command.subcommands.length > 0) {
          // A group lists every command under it by its path.
          for (const leaf of leaves(command)) {
            expect(stdout, name).toMatch(new RegExp(`^  ${leaf.path.slice(1).join(" ")} `, "m"))
          }
          continue
        }
        // The usage: from the path to the first empty line, continuation lines joined.
        const usage = stdout.slice(stdout.indexOf("USAGE\n")).split("\n\n")[0]!.replace(/\s+/g, " ")
        for (const flag of command.flags) {
          expect(flag.description, `${name} ${flag.names[0]}`).not.toBe("")
          expect(stdout, name).toContain(flag.description.split(" ").slice(0, 3).join(" "))
          if (common.has(flag.names[0])) continue
          const token = usageToken(flag)
          expect(usage, `${name} ${flag.names[0]}`).toContain(` ${token}`)
          expect(token.startsWith("["), `${name} ${flag.names[0]}`).toBe(flag.optional)
        }
        for (const arg of command.args) expect(arg.description, `${name} ${arg.name}`).not.toBe("")
      }
      // What a newcomer looks at first, as a process with stdout piped: plain text, no colour codes.
      const piped = await mtg(["video", "create", "--help"])
      expect(piped.code).toBe(0)
      expect(piped.stdout).not.toContain("\x1b[")
      expect(piped.stdout).toContain(
        "USAGE\n  mtg video create --model ID --prompt TEXT --duration SECONDS [--aspect-ratio W:H]\n"
      )
      expect(piped.stdout).toMatch(/^ {2}--image FILE\|URL +Reference image\. In frame mode/m)
      expect(piped.stdout.replace(/\s+/g, " ")).toContain("and a second one the last. Repeatable.")
      expect(piped.stdout).toMatch(/^  --base-url URL +The gateway's address\. From MTG_BASE_URL when not given\./m)
      const root = await mtgInProcess([])
      expect(root.code).toBe(0)
      expect(root.stdout).toMatch(/^  video create +Create a video task\.$/m)
      expect(root.stdout).toContain("Documentation: docs/cli.md.")
      // A group without its command is a usage error that shows the group's help.
      const group = await mtgInProcess(["tasks"])
      expect(group.code).toBe(2)
      expect(group.stderr).toMatch(/^  tasks watch +Follow a task/m)
      expect(group.stderr).toContain("error: mtg tasks needs a command.")
      // @effect/cli's own usage errors end with where the help is.
      const missing = await mtgInProcess(["tasks", "get"])
      expect(missing.code).toBe(2)
      expect(missing.stderr).toContain("Run `mtg tasks get --help` for its usage.")
    },
    180_000
  )

  it(
    "tasks list shows video and image tasks together, newest first with their kind, and pages through both exactly",
    async () => {
      // An account of its own, so the lists hold only these tasks; failing at once, they cost the engine nothing.
      const own = mtgEnv(gw.url, await createAccount(gw, { name: "lister", wallet_credits: 1000 }))
      const fail = ["--provider-options", "{\"sandbox\":{\"outcome\":\"fail\"}}", "--json"]
      const created: Array<{ id: string; kind: string }> = []
      for (const kind of ["video", "image", "video", "video", "image"]) {
        const args = kind === "video"
          ? ["video", "create", "--model", "provy-famS-2.0-480p", "--prompt", "p", "--duration", "4", ...fail]
          : ["image", "create", "--model", "provx-image-1", "--prompt", "p", ...fail]
        const result = await mtgInProcess(args, own)
        expect(result.code, result.stderr).toBe(0)
        created.push({ id: json(result.stdout).task.id, kind })
      }
      const whole = json((await mtgInProcess(["tasks", "list", "--json"], own)).stdout)
      expect(whole).toMatchObject({ object: "list", has_more: false, next_after: null })
      expect(whole.data.map((t: any) => t.id).sort()).toEqual(created.map((t) => t.id).sort())
      const times = whole.data.map((t: any) => t.created_at)
      expect([...times].sort((a, b) => b - a)).toEqual(times)
      // Each kind keeps the API's own order (newest first, exact creation order).
      const ofKind = (kind: string) => whole.data.filter((t: any) => t.object === `${kind}.task`).map((t: any) => t.id)
      expect(ofKind("video")).toEqual(created.filter((t) => t.kind === "video").map((t) => t.id).reverse())
      expect(ofKind("image")).toEqual(created.filter((t) => t.kind === "image").map((t) => t.id).reverse())

      // Two at a time, following each page's cursor: the same tasks, once each, in the same order.
      const paged: Array<string> = []
      let after: string | null = null
      for (let page = 0; page < 5; page++) {
        const result = await mtgInProcess([
          "tasks",
          "list",
          "--limit",
          "2",
          "--json",
          ...(after ? ["--after", after] : [])
        ], own)
        expect(result.code, result.stderr).toBe(0)
        const body = json(result.stdout)
        expect(body.data.length).toBeLessThanOrEqual(2)
        paged.push(...body.data.map((t: any) => t.id))
        after = body.next_after
        if (after === null) break
        expect(after).toMatch(/^(task_\w+)?,(task_\w+)?$/)
      }
      expect(after).toBeNull()
      expect(paged).toEqual(whole.data.map((t: any) => t.id))

      // The human listing: a kind column, and where the next page starts.
      const human = await mtgInProcess(["tasks", "list", "--limit", "3"], own)
      const lines = human.stdout.trim().split("\n")
      expect(lines.slice(0, 3).map((l) => l.split(/\s+/)[1])).toEqual(
        whole.data.slice(0, 3).map((t: any) => t.object.replace(".task", ""))
      )
      expect(lines[3]).toMatch(/^more: --after (task_\w+)?,(task_\w+)?$/)
      // --kind lists one kind, as the API does; a lone task id as the cursor of both is refused.
      const images = json((await mtgInProcess(["tasks", "list", "--kind", "image", "--json"], own)).stdout)
      expect(images.data.map((t: any) => t.id)).toEqual(ofKind("image"))
      const lone = await mtgInProcess(["tasks", "list", "--after", created[0]!.id], own)
      expect(lone.code).toBe(2)
      expect(lone.stderr).toContain("--after takes the cursor a page printed (VIDEO_ID,IMAGE_ID)")
    },
    120_000
  )
})
