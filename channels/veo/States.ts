import { type ResultRef, UpstreamState, withUpstream } from "../../src/channel/contract/Adapter.ts"
import { fromOperationError, unreadableResult, unsafe } from "./Failures.ts"
import { MARKER } from "./Inline.ts"

/**
 * A Veo long-running operation (docs/adapters/veo.md, States and polling) as a
 * normalised state, read from the answer with its long strings already replaced
 * by markers (Inline.ts):
 * - `done` absent or false: Pending (Veo reports no percentage);
 * - `error`: Failed (Failures.fromOperationError);
 * - Gemini `response.generateVideoResponse.generatedSamples[].video` or
 *   Vertex `response.videos[]`: `uri` (downloaded with the key), inline
 *   `bytesBase64Encoded` (decoded as it streams), or `gcsUri`, which this
 *   channel never asks for and cannot read (a clear failure);
 * - done without videos and with `raiMediaFilteredCount` > 0: the safety
 *   filter, a failure with refund that will not pass on retry; done without
 *   videos otherwise: Succeeded with none, which the engine fails with its refund;
 * - anything that is not an operation: Unknown, asked again until the deadline.
 */

/** `ResultRef.auth` for a URL fetched with the channel's credentials. */
export const WITH_KEY = "key"
/** `ResultRef.auth` prefix of an inline result: `inline:N`, with `url` the operation name. */
export const INLINE = "inline:"

interface Video {
  readonly uri?: unknown
  readonly gcsUri?: unknown
  readonly bytesBase64Encoded?: unknown
  readonly encodedVideo?: unknown
  readonly mimeType?: unknown
  /** The Gemini API's name for the mime type (`@google/genai`'s `videoFromMldev` reads it as `mimeType`). */
  readonly encoding?: unknown
}

const str = (value: unknown) => (typeof value === "string" && value.length > 0 ? value : undefined)

const videosOf = (response: any): Array<Video> | undefined => {
  const samples = response?.generateVideoResponse?.generatedSamples ?? response?.generatedSamples
  if (Array.isArray(samples)) return samples.map((s) => (s?.video ?? {}) as Video)
  const videos = response?.videos
  return Array.isArray(videos) ? videos as Array<Video> : undefined
}

const filteredCount = (response: any): number => {
  const r = response?.generateVideoResponse ?? response
  return typeof r?.raiMediaFilteredCount === "number" ? r.raiMediaFilteredCount : 0
}

export const stateOf = (name: string, op: any): UpstreamState => {
  if (typeof op !== "object" || op === null || (op.name !== undefined && op.name !== name)) {
    return UpstreamState.Unknown({ answer: op })
  }
  if (op.done !== true) return UpstreamState.Pending({ answer: op })
  if (op.error !== undefined && op.error !== null) {
    return UpstreamState.Failed({
      error: withUpstream(fromOperationError(op.error), {
        code: op.error.code === undefined ? undefined : String(op.error.code),
        message: typeof op.error.message === "string" ? op.error.message : undefined
      }),
      answer: op,
      // Veo bills the videos it made: a failed operation made none.
      billed: false
    })
  }
  const videos = videosOf(op.response) ?? []
  if (videos.length === 0 && filteredCount(op.response) > 0) {
    // Videos blocked by the safety filter are not billed.
    return UpstreamState.Failed({ error: unsafe(), answer: op, billed: false })
  }
  const results: Array<ResultRef> = []
  for (const video of videos) {
    const mimeType = str(video.mimeType) ?? str(video.encoding) ?? "video/mp4"
    const bytes = str(video.bytesBase64Encoded) ?? str(video.encodedVideo)
    const uri = str(video.uri)
    if (bytes?.startsWith(MARKER)) {
      results.push({ url: name, mimeType, auth: `${INLINE}${bytes.slice(MARKER.length)}` })
    } else if (uri !== undefined && /^https?:\/\//.test(uri)) {
      results.push({ url: uri, mimeType, auth: WITH_KEY })
    } else if (str(video.gcsUri) !== undefined || uri?.startsWith("gs://")) {
      // Made (so billed), where this channel cannot read it.
      return UpstreamState.Failed({ error: unreadableResult(), answer: op, billed: true })
    } else if (bytes !== undefined) {
      // A video under 4 KiB stayed in the answer: not a video Veo makes, and nothing to fetch it from.
      return UpstreamState.Failed({ error: unreadableResult(), answer: op, billed: true })
    }
  }
  // Billed per second of the videos made (none made, none billed): their answer counts none, the engine
  // counts the files it stores.
  return UpstreamState.Succeeded({ results, answer: op, billed: results.length > 0 })
}
