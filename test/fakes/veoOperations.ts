import { mp4 } from "./arkTasks.ts"

/**
 * The fake Veo's operations (test/fakes/veo.ts): the timeline a test scripts
 * for each (`Scenario`, one per create, counted in polls), and the Operation
 * object Google answers at each poll (docs/adapters/veo.md, States and
 * polling): not done, done with videos (a Gemini file URI, inline base64, or a
 * `gcsUri`), done with an `error`, or done with every video removed by the
 * safety filter.
 */

export interface Scenario {
  /** Polls answered not done before the end (1 by default). */
  readonly pending?: number
  readonly end?: "succeeded" | "failed" | "filtered" | "no_video" | "gcs" | "garbage"
  /** For `failed`: the google.rpc.Status (INTERNAL by default). */
  readonly error?: { readonly code: number; readonly status: string; readonly message: string }
  /** Vertex inline results: pad the MP4 with a `free` box to this many bytes. */
  readonly inlineBytes?: number
  /** How long the Gemini file stays downloadable (2 days by default). */
  readonly resultTtlMs?: number
}

export interface FakeOperation {
  readonly name: string
  readonly api: "gemini" | "vertex"
  readonly body: any
  readonly scenario: Scenario
  readonly createdAt: number
  polls: number
  doneAt?: number
}

const ASPECT: Record<string, string> = { "16:9": "16:9", "9:16": "9:16" }

/** The real MP4 a finished operation holds, padded by a trailing `free` box when asked (still a valid MP4). */
export const videoOf = async (op: FakeOperation): Promise<Uint8Array> => {
  const p = op.body.parameters ?? {}
  const base = await mp4(Number(p.durationSeconds ?? 8), ASPECT[p.aspectRatio] ?? "16:9", true)
  const want = op.scenario.inlineBytes ?? 0
  if (want <= base.length + 8) return base
  const out = new Uint8Array(want)
  out.set(base)
  new DataView(out.buffer).setUint32(base.length, want - base.length)
  out.set(new TextEncoder().encode("free"), base.length + 4)
  return out
}

const inlineCache = new Map<string, Promise<string>>()
const base64Of = (op: FakeOperation) => {
  if (!inlineCache.has(op.name)) inlineCache.set(op.name, videoOf(op).then((b) => Buffer.from(b).toString("base64")))
  return inlineCache.get(op.name)!
}

/** The Operation at this poll; `observe` counts it. Inline base64 is spliced in as text, never parsed. */
export const operationText = async (op: FakeOperation, origin: string, observe: boolean): Promise<string> => {
  if (observe) op.polls++
  const { pending = 1, end = "succeeded" } = op.scenario
  if (op.polls <= pending) {
    return JSON.stringify(op.polls === 1 ? { name: op.name } : { name: op.name, done: false, metadata: {} })
  }
  op.doneAt ??= Date.now()
  const id = op.name.split("/").at(-1)!
  const wrap = (response: unknown) => JSON.stringify({ name: op.name, done: true, response })
  if (end === "garbage") return JSON.stringify({ name: op.name, done: "perhaps" })
  if (end === "failed") {
    return JSON.stringify({
      name: op.name,
      done: true,
      error: op.scenario.error ?? { code: 13, status: "INTERNAL", message: "Internal error in project 4217" }
    })
  }
  const filtered = { raiMediaFilteredCount: 1, raiMediaFilteredReasons: ["Sensitive content in project 4217"] }
  if (op.api === "gemini") {
    const type = "type.googleapis.com/google.ai.generativelanguage.v1beta.PredictLongRunningResponse"
    if (end === "filtered") return wrap({ "@type": type, generateVideoResponse: filtered })
    if (end === "no_video") return wrap({ "@type": type, generateVideoResponse: { generatedSamples: [] } })
    return wrap({
      "@type": type,
      generateVideoResponse: {
        generatedSamples: [{ video: { uri: `${origin}/v1beta/files/${id}:download?alt=media` } }]
      }
    })
  }
  const type = "type.googleapis.com/cloud.ai.large_models.vision.GenerateVideoResponse"
  if (end === "filtered") return wrap({ "@type": type, ...filtered, videos: [] })
  if (end === "no_video") return wrap({ "@type": type, raiMediaFilteredCount: 0, videos: [] })
  if (end === "gcs") {
    return wrap({ "@type": type, videos: [{ gcsUri: `gs://veo-out/${id}/sample_0.mp4`, mimeType: "video/mp4" }] })
  }
  const b64 = await base64Of(op)
  // As Vertex writes it: the long string inside the document, mime type after it.
  return `{"name":${JSON.stringify(op.name)},"done":true,"response":{"@type":"${type}","raiMediaFilteredCount":0,` +
    `"videos":[{"bytesBase64Encoded":"${b64}","mimeType":"video/mp4"}]}}`
}
