/**
 * The fake Kling's checks of create bodies (docs/adapters/kling.md, Requests),
 * strict where Kling is: an unknown field, a number where Kling wants a string
 * (or the reverse), a `data:` image, an aspect ratio where the image gives it,
 * a last frame without a first, a model on the wrong endpoint all answer 400
 * code 1201, so an adapter sending anything Kling would refuse fails its test.
 */

export interface Problem {
  readonly message: string
}

const problem = (message: string): Problem => ({ message })
const RATIOS = ["16:9", "9:16", "1:1"]
const DURATIONS = Array.from({ length: 13 }, (_, i) => String(i + 3))

const LEGACY_FIELDS: Record<string, ReadonlyArray<string>> = {
  text2video: [
    "model_name",
    "prompt",
    "negative_prompt",
    "cfg_scale",
    "mode",
    "sound",
    "camera_control",
    "aspect_ratio",
    "duration",
    "callback_url",
    "external_task_id",
    "watermark_info"
  ],
  image2video: [
    "model_name",
    "prompt",
    "negative_prompt",
    "cfg_scale",
    "mode",
    "sound",
    "image",
    "image_tail",
    "static_mask",
    "dynamic_masks",
    "camera_control",
    "duration",
    "callback_url",
    "external_task_id",
    "watermark_info",
    "voice_list",
    "multi_shot",
    "shot_type",
    "multi_prompt"
  ],
  "omni-video": [
    "model_name",
    "prompt",
    "image_list",
    "element_list",
    "video_list",
    "mode",
    "aspect_ratio",
    "duration",
    "sound",
    "multi_shot",
    "shot_type",
    "multi_prompt",
    "watermark_info",
    "callback_url",
    "external_task_id"
  ]
}

const isUrl = (v: unknown) => typeof v === "string" && /^https?:\/\//.test(v)
/** Kling takes a URL or raw base64, never a `data:` URI. */
const isImage = (v: unknown) => typeof v === "string" && (isUrl(v) || /^[A-Za-z0-9+/]+=*$/.test(v))

export const legacyProblem = (kind: string, body: any): Problem | undefined => {
  if (body === null || typeof body !== "object") return problem("body must be an object")
  const fields = LEGACY_FIELDS[kind]!
  for (const field of Object.keys(body)) if (!fields.includes(field)) return problem(`unknown field ${field}`)
  const omniModel = /omni|o1/.test(String(body.model_name))
  if (typeof body.model_name !== "string" || omniModel !== (kind === "omni-video")) {
    return problem(`model_name ${body.model_name} is not served by ${kind}`)
  }
  if (typeof body.prompt !== "string" || body.prompt.length === 0 || body.prompt.length > 2500) {
    return problem("prompt is required (at most 2500 characters)")
  }
  if (body.duration !== undefined && !DURATIONS.includes(body.duration)) return problem("duration must be \"3\"…\"15\"")
  if (body.mode !== undefined && body.mode !== "std" && body.mode !== "pro") return problem("mode must be std or pro")
  if (body.sound !== undefined && body.sound !== "on" && body.sound !== "off") return problem("sound must be on/off")
  if (body.aspect_ratio !== undefined && !RATIOS.includes(body.aspect_ratio)) return problem("aspect_ratio invalid")
  if (
    body.cfg_scale !== undefined && (typeof body.cfg_scale !== "number" || body.cfg_scale < 0 || body.cfg_scale > 1)
  ) {
    return problem("cfg_scale must be 0..1")
  }
  if (kind === "image2video") {
    if (!isImage(body.image)) return problem("image must be a URL or raw base64")
    if (body.image_tail !== undefined && !isImage(body.image_tail)) return problem("image_tail must be a URL or base64")
  }
  if (kind === "omni-video") {
    const list = body.image_list ?? []
    if (!Array.isArray(list) || list.length > 7) return problem("image_list must be an array of at most 7")
    for (const item of list) {
      if (Object.keys(item).some((k) => k !== "image_url" && k !== "type")) return problem("image_list item fields")
      if (!isImage(item.image_url)) return problem("image_list.image_url must be a URL or raw base64")
      if (item.type !== undefined && item.type !== "first_frame" && item.type !== "end_frame") {
        return problem("image_list.type must be first_frame or end_frame")
      }
    }
    const first = list.some((i: any) => i.type === "first_frame")
    if (list.some((i: any) => i.type === "end_frame") && !first) return problem("end_frame needs a first_frame")
    if (!first && body.aspect_ratio === undefined) return problem("aspect_ratio is required without a first frame")
    for (const [, n] of String(body.prompt).matchAll(/<<<image_(\d+)>>>/g)) {
      if (Number(n) < 1 || Number(n) > list.length) return problem(`<<<image_${n}>>> names no image`)
    }
  }
  if (typeof body.external_task_id !== "string" && body.external_task_id !== undefined) {
    return problem("external_task_id must be a string")
  }
  return undefined
}

const CURRENT_TYPES: Record<string, ReadonlyArray<string>> = {
  "image-to-video": ["prompt", "first_frame", "last_frame", "element"],
  "omni-video": ["prompt", "first_frame", "last_frame", "refer_image", "feature_video", "base_video", "element"]
}
const CURRENT_MODELS: Record<string, ReadonlyArray<string>> = {
  "text-to-video": ["kling-3.0", "kling-3.0-turbo"],
  "image-to-video": ["kling-3.0", "kling-3.0-turbo"],
  "omni-video": ["kling-3.0-omni", "kling-o1"]
}

export const knownModel = (endpoint: string, model: string) => CURRENT_MODELS[endpoint]?.includes(model) ?? false

export const currentProblem = (endpoint: string, body: any): Problem | undefined => {
  if (body === null || typeof body !== "object") return problem("body must be an object")
  const top = endpoint === "text-to-video" ? ["prompt", "settings", "options"] : ["contents", "settings", "options"]
  for (const field of Object.keys(body)) if (!top.includes(field)) return problem(`unknown field ${field}`)
  const s = body.settings ?? {}
  for (const field of Object.keys(s)) {
    if (!["multi_shot", "audio", "resolution", "aspect_ratio", "duration"].includes(field)) {
      return problem(`unknown setting ${field}`)
    }
  }
  const audios = endpoint === "omni-video" ? ["native", "off", "original"] : ["native", "off"]
  if (s.audio !== undefined && !audios.includes(s.audio)) return problem("settings.audio invalid")
  if (s.resolution !== undefined && !["720p", "1080p", "4k"].includes(s.resolution)) return problem("resolution")
  if (s.duration !== undefined && !(Number.isInteger(s.duration) && s.duration >= 3 && s.duration <= 15)) {
    return problem("settings.duration must be an integer 3..15")
  }
  if (s.aspect_ratio !== undefined && !RATIOS.includes(s.aspect_ratio)) return problem("settings.aspect_ratio")
  for (const field of Object.keys(body.options ?? {})) {
    if (!["callback_url", "external_task_id", "watermark_info"].includes(field)) {
      return problem(`unknown option ${field}`)
    }
  }
  if (endpoint === "text-to-video") {
    if (typeof body.prompt !== "string" || body.prompt.length === 0) return problem("prompt is required")
    return undefined
  }
  const contents = body.contents
  if (!Array.isArray(contents) || contents.length === 0) return problem("contents must be a non-empty array")
  const count: Record<string, number> = {}
  for (const item of contents) {
    if (!CURRENT_TYPES[endpoint]!.includes(item?.type)) return problem(`contents type ${item?.type} not allowed`)
    count[item.type] = (count[item.type] ?? 0) + 1
    if (item.type === "prompt" ? typeof item.text !== "string" : item.type !== "element" && !isUrl(item.url)) {
      return problem(`contents ${item.type} needs ${item.type === "prompt" ? "text" : "url"}`)
    }
  }
  if ((count.first_frame ?? 0) > 1 || (count.last_frame ?? 0) > 1) return problem("one frame of each kind")
  if (count.last_frame && !count.first_frame) return problem("last_frame needs a first_frame")
  if (endpoint === "image-to-video") {
    if (!count.first_frame) return problem("first_frame is required")
    if (s.aspect_ratio !== undefined) return problem("aspect_ratio is taken from the image")
  }
  if (endpoint === "omni-video") {
    const video = (count.feature_video ?? 0) + (count.base_video ?? 0)
    if (!count.first_frame && !video && s.aspect_ratio === undefined) return problem("aspect_ratio is required")
    if ((count.refer_image ?? 0) > (video ? 4 : 7)) return problem("too many reference images")
  }
  return undefined
}
