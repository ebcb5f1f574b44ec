import ffmpeg from "@ffmpeg-installer/ffmpeg"
import { chmodSync, rmSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { scratchDir } from "./sandboxMedia.ts"

/**
 * An `FFMPEG_PATH` for a gateway under test: the real ffmpeg behind two
 * switches the test sets. `hold` keeps every render waiting (a slow image
 * service), `down` makes every render fail (an unavailable one: the engine
 * retries it, then fails the task with `524`). Nothing in the gateway knows.
 */
export const switchableFfmpeg = () => {
  const dir = scratchDir()
  const path = join(dir, "ffmpeg")
  writeFileSync(
    path,
    [
      "#!/bin/sh",
      `while [ -e '${dir}/hold' ]; do sleep 0.05; done`,
      `if [ -e '${dir}/down' ]; then echo 'image service down (test switch)' >&2; exit 1; fi`,
      `exec '${ffmpeg.path}' "$@"`,
      ""
    ].join("\n")
  )
  chmodSync(path, 0o755)
  const set = (name: string, on: boolean) =>
    on ? writeFileSync(join(dir, name), "") : rmSync(join(dir, name), { force: true })
  return {
    path,
    hold: (on: boolean) => set("hold", on),
    down: (on: boolean) => set("down", on)
  }
}
