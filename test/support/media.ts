import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { rawProbe } from "./sandboxMedia.ts"

export interface Probed {
  readonly formatName: string
  readonly majorBrand: string | undefined
  readonly durationS: number
  readonly video: { codec: string; width: number; height: number; pixFmt: string } | undefined
  readonly audio: { codec: string } | undefined
}

/**
 * Parses downloaded media bytes with the test's own ffprobe, independently of
 * the service under test, so a test checks the file and not the fields the
 * service reports.
 */
export const probeBytes = async (bytes: Uint8Array): Promise<Probed> => {
  const dir = mkdtempSync(join(tmpdir(), "gw-probe-"))
  const file = join(dir, "media")
  writeFileSync(file, bytes)
  try {
    const json = await rawProbe(file)
    const video = json.streams.find((s) => s.codec_type === "video")
    const audio = json.streams.find((s) => s.codec_type === "audio")
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
