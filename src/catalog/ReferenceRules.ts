import type { MediaConstraint, MediaKind, VideoModelCapability } from "./contract/Capabilities.ts"
import type { ValidVideoRequest } from "./contract/Requests.ts"

/**
 * The per-file and total rules for reference media, derived from a model's
 * `media` table (spec: the `famS` per-file constraints table). Pure: the
 * creation check (confirmed uploads, durations known) and the task engine
 * (external URLs, fetched and probed) both apply them and only differ in
 * how a violation is reported.
 */

/** One reference of a request: where it sits, the kind its field takes, its URL. */
export interface ReferenceSlot {
  readonly where: string
  readonly kind: MediaKind
  readonly url: string
}

export const referenceSlots = (request: ValidVideoRequest): ReadonlyArray<ReferenceSlot> => [
  ...(request.image ? [{ where: "input.image", kind: "image" as const, url: request.image.url }] : []),
  ...request.referenceImages.map((r, i) => ({
    where: `input.reference_images[${i}]`,
    kind: "image" as const,
    url: r.url
  })),
  ...request.referenceVideos.map((r, i) => ({
    where: `input.reference_videos[${i}]`,
    kind: "video" as const,
    url: r.url
  })),
  ...request.referenceAudios.map((r, i) => ({
    where: `input.reference_audios[${i}]`,
    kind: "audio" as const,
    url: r.url
  }))
]

/** What is really known about one reference's content. */
export interface KnownMedia {
  readonly where: string
  /** The kind of the field it sits in; its content has been found to be of this kind. */
  readonly kind: MediaKind
  readonly mimeType: string
  readonly sizeBytes: number
  /** Video and audio only. */
  readonly durationMs?: number | undefined
}

/**
 * Which rule a reference broke. `type` and `size` are about the file;
 * `too_short`, `too_long` and `total` about durations.
 */
export interface Violation {
  readonly rule: "type" | "size" | "too_short" | "too_long" | "total"
  readonly kind: MediaKind
  readonly message: string
}

/**
 * Containers often report a few milliseconds more than the nominal length
 * (an AAC priming frame, an edit list); a bound is enforced with this slack
 * so a 10 s clip is not refused as 10.02 s.
 */
export const DURATION_SLACK_MS = 50

const PLURAL: Record<MediaKind, string> = { image: "images", video: "videos", audio: "audios" }

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`
const bound = (s: number) => `${Number.isInteger(s) ? s : s.toFixed(1)} s`

/** The constraint a model declares for a kind, if any: no constraint means nothing to check. */
export const constraintOf = (capability: VideoModelCapability, kind: MediaKind): MediaConstraint | undefined =>
  capability.media?.[kind]

/**
 * The first rule `items` break under `capability`, checking each file, then
 * the total duration per kind. When only some references are known (at
 * creation, external URLs are not fetched yet), the totals are lower bounds
 * and a violation is still certain.
 */
export const checkReferenceMedia = (
  capability: VideoModelCapability,
  items: ReadonlyArray<KnownMedia>
): Violation | undefined => {
  const model = capability.id
  for (const item of items) {
    const c = constraintOf(capability, item.kind)
    if (c === undefined) continue
    if (!c.mime_types.includes(item.mimeType)) {
      return {
        rule: "type",
        kind: item.kind,
        message: `${item.where} is ${item.mimeType}; ${model} accepts reference ${PLURAL[item.kind]} of type ${
          c.mime_types.join(", ")
        }.`
      }
    }
    if (item.sizeBytes > c.max_bytes) {
      return {
        rule: "size",
        kind: item.kind,
        message: `${item.where} has ${item.sizeBytes} bytes; ${model} accepts reference ${
          PLURAL[item.kind]
        } of at most ${c.max_bytes} bytes.`
      }
    }
    const ms = item.durationMs
    if (ms === undefined) continue
    const range = c.min_duration_s !== undefined && c.max_duration_s !== undefined
      ? `${bound(c.min_duration_s).slice(0, -2)} to ${bound(c.max_duration_s)}`
      : c.max_duration_s !== undefined
      ? `at most ${bound(c.max_duration_s)}`
      : `at least ${bound(c.min_duration_s ?? 0)}`
    if (c.min_duration_s !== undefined && ms < c.min_duration_s * 1000 - DURATION_SLACK_MS) {
      return {
        rule: "too_short",
        kind: item.kind,
        message: `${item.where} lasts ${seconds(ms)}; ${model} accepts reference ${PLURAL[item.kind]} of ${range} each.`
      }
    }
    if (c.max_duration_s !== undefined && ms > c.max_duration_s * 1000 + DURATION_SLACK_MS) {
      return {
        rule: "too_long",
        kind: item.kind,
        message: `${item.where} lasts ${seconds(ms)}; ${model} accepts reference ${PLURAL[item.kind]} of ${range} each.`
      }
    }
  }
  for (const kind of ["video", "audio"] as const) {
    const max = constraintOf(capability, kind)?.max_total_duration_s
    if (max === undefined) continue
    const total = items.reduce((sum, i) => (i.kind === kind ? sum + (i.durationMs ?? 0) : sum), 0)
    if (total > max * 1000 + DURATION_SLACK_MS) {
      return {
        rule: "total",
        kind,
        message: `The reference ${PLURAL[kind]} last ${seconds(total)} in all; ${model} accepts at most ${
          bound(max)
        } in all.`
      }
    }
  }
  return undefined
}

/** What an upload of a kind may be: the union of the types and the largest size any enabled model accepts. */
export interface UploadRule {
  readonly mimeTypes: ReadonlyArray<string>
  readonly maxBytes: number
}

/**
 * Media uploads are not tied to a model, so a session accepts what at least
 * one enabled video model accepts for the kind; the model of a task applies
 * its own, possibly narrower, rules when the upload is used.
 */
export const uploadRules = (
  capabilities: ReadonlyArray<VideoModelCapability>
): Partial<Record<MediaKind, UploadRule>> => {
  const rules: Partial<Record<MediaKind, { mimeTypes: Set<string>; maxBytes: number }>> = {}
  for (const capability of capabilities) {
    for (const kind of ["image", "video", "audio"] as const) {
      const c = constraintOf(capability, kind)
      if (c === undefined) continue
      const rule = (rules[kind] ??= { mimeTypes: new Set(), maxBytes: 0 })
      for (const t of c.mime_types) rule.mimeTypes.add(t)
      rule.maxBytes = Math.max(rule.maxBytes, c.max_bytes)
    }
  }
  return Object.fromEntries(
    Object.entries(rules).map(([kind, r]) => [kind, { mimeTypes: [...r.mimeTypes], maxBytes: r.maxBytes }])
  )
}
