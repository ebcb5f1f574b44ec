import ffmpeg from "@ffmpeg-installer/ffmpeg"
import { execFile } from "node:child_process"
import { mkdtempSync, readFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"

/**
 * Real media for the fake upstreams to serve, made by ffmpeg once per shape
 * and kept for the process: the engine inspects every result, so a fake
 * must answer with files that are what they claim to be.
 */

const exec = promisify(execFile)
const scratch = mkdtempSync(join(tmpdir(), "fake-media-"))
const rendered = new Map<string, Promise<Uint8Array>>()

const render = (name: string, args: ReadonlyArray<string>) => {
  if (!rendered.has(name)) {
    const file = join(scratch, name)
    rendered.set(
      name,
      exec(ffmpeg.path, ["-v", "error", ...args, "-y", file]).then(() => new Uint8Array(readFileSync(file)))
    )
  }
  return rendered.get(name)!
}

/** An MP4 (H.264 + AAC) of that size (`WxH`) and length in seconds. */
export const movie = (size: string, seconds: string) =>
  render(`${size}-${seconds}.mp4`, [
    ...["-f", "lavfi", "-i", `testsrc2=size=${size}:rate=24:duration=${seconds}`],
    ...["-f", "lavfi", "-i", `sine=frequency=440:duration=${seconds}`],
    ...["-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest"],
    ...["-movflags", "+faststart"]
  ])

/** A PNG of that size (`WxH`). */
export const picture = (size: string) =>
  render(`${size}.png`, ["-f", "lavfi", "-i", `testsrc2=size=${size}:rate=1`, "-frames:v", "1"])
