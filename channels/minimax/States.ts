import { UpstreamState, withUpstream } from "../../src/channel/contract/Adapter.ts"
import { codeOf, fromTaskFailure } from "./Failures.ts"

/**
 * A MiniMax query answer (`GET /v1/query/video_generation`) as a normalised
 * state (docs/adapters/minimax.md, States and polling). `status` is one of
 * `Preparing`, `Queueing`, `Processing`, `Success`, `Fail`; a success
 * carries `file_id` (the video is fetched through the files API) and
 * `video_width` / `video_height`. Any other word is Unknown, asked again
 * until the channel's deadline.
 */

export interface QueryAnswer {
  readonly task_id?: unknown
  readonly status?: unknown
  readonly file_id?: unknown
  readonly video_width?: unknown
  readonly video_height?: unknown
  readonly base_resp?: { readonly status_code?: unknown; readonly status_msg?: unknown }
}

/** `retrieveUrl(file_id)`: where the finished video's file is described (Requests.ts). */
export const stateOf = (answer: QueryAnswer, retrieveUrl: (fileId: string) => string): UpstreamState => {
  switch (answer.status) {
    case "Preparing":
    case "Queueing":
      return UpstreamState.Pending({ progress: 0, answer })
    case "Processing":
      return UpstreamState.Pending({ answer })
    case "Success": {
      const fileId = typeof answer.file_id === "string" && answer.file_id !== ""
        ? answer.file_id
        : typeof answer.file_id === "number"
        ? String(answer.file_id)
        : undefined
      // Done but no file: the engine fails it with its refund ("done but no output").
      const results = fileId === undefined ? [] : [{ url: retrieveUrl(fileId), mimeType: "video/mp4" }]
      // MiniMax bills a video it made; its answer counts nothing more (the engine counts the seconds stored).
      return UpstreamState.Succeeded({ results, answer, billed: true })
    }
    case "Fail": {
      const code = codeOf(answer)
      const message = typeof answer.base_resp?.status_msg === "string" ? answer.base_resp.status_msg : undefined
      return UpstreamState.Failed({
        error: withUpstream(fromTaskFailure(code === 0 ? undefined : code), {
          code: code === undefined ? "Fail" : String(code),
          message
        }),
        answer,
        // A failed generation is not billed.
        billed: false
      })
    }
    default:
      return UpstreamState.Unknown({ answer })
  }
}
