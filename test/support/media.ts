import ffprobe from "@ffprobe-installer/ffprobe"
import { execFile } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { promisify } from "node:util"

export interface Probed {
  readonly formatName: string
  readonly majorBrand: string | undefined
  readonly durationS: number
  readonly video: { codec: string; width: number; height: number; pixFmt: string } | undefined
  readonly audio: { codec: string } | undefined
}

/**
 * Parses media bytes with ffprobe, independently of the service under test,
 * so a test checks the file itself and not the fields the service reports.
 */
export const probeBytes = async (bytes: Uint8Array): Promise<Probed> => {
  const dir = mkdtempSync(join(tmpdir(), "gw-probe-"))
  const file = join(dir, "media")
  writeFileSync(file, bytes)
  try {
    const { stdout } = await promisify(execFile)(ffprobe.path, [
      "-v", "error", "-print_format", "json", "-show_format", "-show_streams", file
    ])
    const json = JSON.parse(stdout)
    const video = json.streams.find((s: any) => s.codec_type === "video")
    const audio = json.streams.find((s: any) => s.codec_type === "audio")
    return {
      formatName: json.format.format_name,
      majorBrand: json.format.tags?.major_brand,
      durationS: Number(json.format.duration),
      video: video && { codec: video.codec_name, width: video.width, height: video.height, pixFmt: video.pix_fmt },
      audio: audio && { codec: audio.codec_name }
    }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
