import { Context } from "effect"

/**
 * Where the ffmpeg and ffprobe executables are. The runtime provides it
 * (`src/runtime/node/MediaTools.ts` on Node), so the core never resolves binaries
 * or reads the environment for them itself.
 */
export class MediaTools extends Context.Tag("MediaTools")<MediaTools, {
  readonly ffmpegPath: string
  readonly ffprobePath: string
}>() {}
