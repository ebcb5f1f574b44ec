import { CommandExecutor } from "@effect/platform"
import { NodeContext } from "@effect/platform-node"
import ffmpeg from "@ffmpeg-installer/ffmpeg"
import ffprobe from "@ffprobe-installer/ffprobe"
import { Effect, Layer, ManagedRuntime } from "effect"
import { execFile } from "node:child_process"
import { createHash } from "node:crypto"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"
import { SandboxRenderer } from "../../channels/sandbox/SandboxRenderer.ts"
import { MediaTools } from "../../src/platform/MediaTools.ts"
import { MediaToolsLive } from "../../src/runtime/node/MediaTools.ts"

const exec = promisify(execFile)

const scratch: Array<string> = []

export const scratchDir = () => {
  const dir = mkdtempSync(join(tmpdir(), "sandbox-media-test-"))
  scratch.push(dir)
  return dir
}

/** For `afterAll`: removes every directory `scratchDir` made in this test file. */
export const removeScratch = () => {
  for (const dir of scratch.splice(0)) rmSync(dir, { recursive: true, force: true })
}

export const writeTemp = (bytes: Uint8Array, name = "media.mp4"): string => {
  const file = join(scratchDir(), name)
  writeFileSync(file, bytes)
  return file
}

/** Every process the renderer started, so a test can check it is gone. */
export interface Started {
  readonly pid: number
  readonly args: ReadonlyArray<string>
}

/**
 * A SandboxRenderer over the real Node platform, with a CommandExecutor that
 * records what it starts. `tools` replaces the binaries (to fake a hung one).
 */
export const rendererRuntime = (tools?: { ffmpegPath: string; ffprobePath: string }) => {
  const started: Array<Started> = []
  const recording = Layer.effect(
    CommandExecutor.CommandExecutor,
    Effect.map(
      CommandExecutor.CommandExecutor,
      (inner) =>
        CommandExecutor.makeExecutor((command) =>
          Effect.tap(inner.start(command), (proc) =>
            Effect.sync(() => {
              if (command._tag === "StandardCommand") started.push({ pid: proc.pid, args: command.args })
            }))
        )
    )
  ).pipe(Layer.provide(NodeContext.layer))
  const layer = SandboxRenderer.layer.pipe(
    Layer.provide(tools ? Layer.succeed(MediaTools, tools) : MediaToolsLive),
    // Right wins in a merge: the recording executor replaces the platform's own.
    Layer.provide(Layer.merge(NodeContext.layer, recording))
  )
  return { runtime: ManagedRuntime.make(layer), started }
}

export const isAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}

export interface RawProbe {
  readonly format: { format_name: string; duration: string; tags?: Record<string, string> }
  readonly streams: ReadonlyArray<Record<string, any>>
}

/** ffprobe run by the test itself, so assertions check the file and not what the service says about it. */
export const rawProbe = async (file: string): Promise<RawProbe> => {
  const { stdout } = await exec(ffprobe.path, [
    "-v",
    "error",
    "-count_packets",
    "-print_format",
    "json",
    "-show_format",
    "-show_streams",
    file
  ])
  return JSON.parse(stdout)
}

/** One decoded frame at `seconds`, as RGB bytes. */
export const frameAt = async (file: string, seconds: number): Promise<Buffer> => {
  const { stdout } = await exec(
    ffmpeg.path,
    ["-v", "error", "-ss", String(seconds), "-i", file, "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-"],
    { encoding: "buffer", maxBuffer: 64 * 1024 * 1024 }
  )
  return stdout
}

/** The first `seconds` of the audio track, decoded to 16-bit PCM. */
export const pcm = async (file: string, seconds: number): Promise<Buffer> => {
  const { stdout } = await exec(
    ffmpeg.path,
    ["-v", "error", "-i", file, "-map", "0:a:0", "-t", String(seconds), "-f", "s16le", "-"],
    { encoding: "buffer", maxBuffer: 64 * 1024 * 1024 }
  )
  return stdout
}

export const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex")

/** Mean absolute difference per byte: 0 for equal frames, tens for visibly different ones. */
export const meanAbsDiff = (a: Uint8Array, b: Uint8Array): number => {
  let sum = 0
  for (let i = 0; i < a.length; i++) sum += Math.abs(a[i]! - b[i]!)
  return sum / a.length
}

/** Top-level MP4 box types in file order (faststart puts `moov` before `mdat`). */
export const topLevelBoxes = (bytes: Uint8Array): Array<string> => {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  const boxes: Array<string> = []
  for (let at = 0; at + 8 <= bytes.length;) {
    const size = view.getUint32(at)
    boxes.push(String.fromCharCode(...bytes.subarray(at + 4, at + 8)))
    if (size < 8) break
    at += size
  }
  return boxes
}

/** Audio files made by ffmpeg directly, for probing formats the renderer does not write. */
export const makeAudio = async (name: "tone.wav" | "tone.mp3", seconds: number): Promise<string> => {
  const file = join(scratchDir(), name)
  await exec(ffmpeg.path, ["-v", "error", "-f", "lavfi", "-i", `sine=frequency=330:duration=${seconds}`, "-y", file])
  return file
}
