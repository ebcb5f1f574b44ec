import ffmpeg from "@ffmpeg-installer/ffmpeg"
import { execFile } from "node:child_process"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { promisify } from "node:util"
import { frameAt, scratchDir, writeTemp } from "./sandboxMedia.ts"

const exec = promisify(execFile)

/** Image fixtures and pixel reads made by the test's own ffmpeg, independent of the service. */

const render = async (name: string, args: ReadonlyArray<string>) => {
  const file = join(scratchDir(), name)
  await exec(ffmpeg.path, ["-v", "error", ...args, "-frames:v", "1", "-y", file])
  return new Uint8Array(readFileSync(file))
}

/** A colourful PNG (ffmpeg's test pattern). */
export const makePng = (width: number, height: number) =>
  render("pattern.png", ["-f", "lavfi", "-i", `testsrc2=size=${width}x${height}`, "-pix_fmt", "rgb24"])

/** A mask whose left half is transparent (to be edited) and right half opaque (to be kept). */
export const makeLeftHalfMask = (width: number, height: number) =>
  render("mask.png", [
    "-f",
    "lavfi",
    "-i",
    `color=c=black:s=${width}x${height},format=rgba`,
    "-vf",
    `geq=r=0:g=0:b=0:a='if(lt(X\\,${width / 2})\\,0\\,255)'`,
    "-pix_fmt",
    "rgba"
  ])

/** Decoded RGB bytes of an image, row by row. */
export const rgbPixels = (bytes: Uint8Array) => frameAt(writeTemp(bytes, "image"), 0)

/** The RGB bytes of columns [from, to) of every row. */
export const columns = (rgb: Uint8Array, width: number, from: number, to: number) => {
  const rows = rgb.length / (width * 3)
  const out: Array<number> = []
  for (let y = 0; y < rows; y++) {
    for (let x = from; x < to; x++) out.push(...rgb.subarray((y * width + x) * 3, (y * width + x) * 3 + 3))
  }
  return Uint8Array.from(out)
}
