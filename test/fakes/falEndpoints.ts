/**
 * The input schemas of the fal endpoints the fake serves, written from
 * `@fal-ai/client` 1.10.1's `src/types/endpoints.d.ts` (not from the
 * adapter's data, so a mapping mistake shows as fal would show it: a 422 at
 * the result fetch). Each field: its type, or the values it takes.
 */

type Field = "string" | "boolean" | "number" | "integer" | "url" | "urls" | ReadonlyArray<string>

export interface EndpointSchema {
  readonly output: "video" | "images"
  /** A video endpoint whose videos are silent whatever is sent (no audio switch), as Hailuo's are. */
  readonly silent?: boolean
  readonly required: ReadonlyArray<string>
  readonly fields: Readonly<Record<string, Field>>
}

const range = (min: number, max: number, suffix = "") =>
  Array.from({ length: max - min + 1 }, (_, i) => `${min + i}${suffix}`)

const klingCommon = {
  prompt: "string",
  duration: range(3, 15),
  generate_audio: "boolean",
  negative_prompt: "string",
  cfg_scale: "number",
  shot_type: "string"
} as const

const seedanceCommon = {
  prompt: "string",
  duration: range(4, 12),
  aspect_ratio: ["21:9", "16:9", "4:3", "1:1", "3:4", "9:16", "auto"],
  resolution: ["480p", "720p", "1080p"],
  camera_fixed: "boolean",
  generate_audio: "boolean",
  enable_safety_checker: "boolean",
  seed: "integer"
} as const

const veoCommon = {
  prompt: "string",
  duration: ["4s", "6s", "8s"],
  generate_audio: "boolean",
  negative_prompt: "string",
  seed: "integer",
  auto_fix: "boolean",
  safety_tolerance: ["1", "2", "3", "4", "5", "6"]
} as const

const veo = (prefix: string): Record<string, EndpointSchema> => ({
  [prefix]: {
    output: "video",
    required: ["prompt"],
    fields: { ...veoCommon, aspect_ratio: ["16:9", "9:16"], resolution: ["720p", "1080p"] }
  },
  [`${prefix}/image-to-video`]: {
    output: "video",
    required: ["prompt", "image_url"],
    fields: { ...veoCommon, image_url: "url", aspect_ratio: ["auto", "16:9", "9:16"], resolution: ["720p", "1080p"] }
  },
  [`${prefix}/first-last-frame-to-video`]: {
    output: "video",
    required: ["prompt", "first_frame_url", "last_frame_url"],
    fields: {
      ...veoCommon,
      first_frame_url: "url",
      last_frame_url: "url",
      aspect_ratio: ["auto", "16:9", "9:16"],
      resolution: ["720p", "1080p", "4k"]
    }
  }
})

const banana = {
  prompt: "string",
  num_images: "integer",
  output_format: ["jpeg", "png", "webp"],
  seed: "integer",
  sync_mode: "boolean",
  safety_tolerance: ["1", "2", "3", "4", "5", "6"],
  limit_generations: "boolean"
} as const
const ratios = ["21:9", "16:9", "3:2", "4:3", "5:4", "1:1", "4:5", "3:4", "2:3", "9:16"]

const klingV3 = (prefix: string): Record<string, EndpointSchema> => ({
  [`${prefix}/text-to-video`]: {
    output: "video",
    required: [],
    fields: { ...klingCommon, aspect_ratio: ["16:9", "9:16", "1:1"] }
  },
  [`${prefix}/image-to-video`]: {
    output: "video",
    required: ["start_image_url"],
    fields: { ...klingCommon, start_image_url: "url", end_image_url: "url" }
  }
})

/** Kling O3 Pro: no negative_prompt or cfg_scale; reference images named @Image1… in the prompt. */
const klingO3 = {
  prompt: "string",
  duration: range(3, 15),
  generate_audio: "boolean",
  multi_prompt: "string",
  shot_type: "string"
} as const

/**
 * Wan 2.5 preview, as the client types it (its text-to-video input is typed
 * as Wan 2.7's: 2 to 15 s, 720p or 1080p; the image one 5 or 10 s, with no
 * ratio, the frame's shape). No `generate_audio`: its videos have sound.
 */
const wanCommon = {
  prompt: "string",
  audio_url: "url",
  enable_prompt_expansion: "boolean",
  enable_safety_checker: "boolean",
  negative_prompt: "string",
  seed: "integer"
} as const

/** Hailuo 02 Standard: 6 or 10 s, 768P; the image endpoint takes a last frame too; silent videos. */
const hailuo = { prompt: "string", duration: ["6", "10"], prompt_optimizer: "boolean" } as const

export const SCHEMAS: Readonly<Record<string, EndpointSchema>> = {
  "fal-ai/minimax/hailuo-02/standard/text-to-video": {
    output: "video",
    silent: true,
    required: ["prompt"],
    fields: hailuo
  },
  "fal-ai/minimax/hailuo-02/standard/image-to-video": {
    output: "video",
    silent: true,
    required: ["prompt", "image_url"],
    fields: { ...hailuo, image_url: "url", end_image_url: "url", resolution: ["512P", "768P"] }
  },
  "fal-ai/wan-25-preview/text-to-video": {
    output: "video",
    required: ["prompt"],
    fields: {
      ...wanCommon,
      aspect_ratio: ["16:9", "9:16", "1:1", "4:3", "3:4"],
      duration: range(2, 15),
      resolution: ["720p", "1080p"]
    }
  },
  "fal-ai/wan-25-preview/image-to-video": {
    output: "video",
    required: ["prompt", "image_url"],
    fields: { ...wanCommon, image_url: "url", duration: ["5", "10"], resolution: ["480p", "720p", "1080p"] }
  },
  ...klingV3("fal-ai/kling-video/v3/pro"),
  ...klingV3("fal-ai/kling-video/v3/standard"),
  "fal-ai/kling-video/o3/pro/text-to-video": {
    output: "video",
    required: [],
    fields: { ...klingO3, aspect_ratio: ["16:9", "9:16", "1:1"] }
  },
  "fal-ai/kling-video/o3/pro/image-to-video": {
    output: "video",
    required: ["image_url"],
    fields: { ...klingO3, image_url: "url", end_image_url: "url" }
  },
  "fal-ai/kling-video/o3/pro/reference-to-video": {
    output: "video",
    required: [],
    fields: {
      ...klingO3,
      aspect_ratio: ["16:9", "9:16", "1:1"],
      image_urls: "urls",
      start_image_url: "url",
      end_image_url: "url"
    }
  },
  "fal-ai/veo3.1/reference-to-video": {
    output: "video",
    required: ["prompt", "image_urls"],
    fields: {
      prompt: "string",
      image_urls: "urls",
      duration: ["8s"],
      aspect_ratio: ["16:9", "9:16"],
      resolution: ["720p", "1080p", "4k"],
      generate_audio: "boolean",
      auto_fix: "boolean",
      safety_tolerance: ["1", "2", "3", "4", "5", "6"]
    }
  },
  "fal-ai/bytedance/seedance/v1.5/pro/text-to-video": {
    output: "video",
    required: ["prompt"],
    fields: seedanceCommon
  },
  "fal-ai/bytedance/seedance/v1.5/pro/image-to-video": {
    output: "video",
    required: ["prompt", "image_url"],
    fields: { ...seedanceCommon, image_url: "url", end_image_url: "url" }
  },
  ...veo("fal-ai/veo3.1"),
  ...veo("fal-ai/veo3.1/fast"),
  "fal-ai/nano-banana": { output: "images", required: ["prompt"], fields: { ...banana, aspect_ratio: ratios } },
  "fal-ai/nano-banana/edit": {
    output: "images",
    required: ["prompt", "image_urls"],
    fields: { ...banana, image_urls: "urls", aspect_ratio: ["auto", ...ratios] }
  }
}

const isUrl = (v: unknown) => typeof v === "string" && /^(https?:\/\/|data:[a-z]+\/[a-z0-9.+-]+;base64,)/.test(v)

/** FastAPI's 422 `detail` items for an input, as fal's runners answer them; empty when the input is valid. */
export const problemsOf = (
  schema: EndpointSchema,
  input: any
): Array<{ loc: Array<string>; msg: string; type: string }> => {
  const problems: Array<{ loc: Array<string>; msg: string; type: string }> = []
  if (typeof input !== "object" || input === null) return [{ loc: ["body"], msg: "not an object", type: "type_error" }]
  for (const key of schema.required) {
    if (input[key] === undefined) problems.push({ loc: ["body", key], msg: "field required", type: "missing" })
  }
  for (const [key, value] of Object.entries(input)) {
    const field = schema.fields[key]
    const bad = (msg: string, type: string) => problems.push({ loc: ["body", key], msg, type })
    if (field === undefined) bad("Extra inputs are not permitted", "extra_forbidden")
    else if (Array.isArray(field)) {
      if (!field.includes(value as string)) {
        bad(`Input should be ${field.map((f) => `'${f}'`).join(", ")}`, "literal_error")
      }
    } else if (field === "string" && typeof value !== "string") bad("Input should be a valid string", "string_type")
    else if (field === "boolean" && typeof value !== "boolean") bad("Input should be a valid boolean", "bool_type")
    else if (field === "number" && typeof value !== "number") bad("Input should be a valid number", "float_type")
    else if (field === "integer" && !Number.isInteger(value)) bad("Input should be a valid integer", "int_type")
    else if (field === "url" && !isUrl(value)) bad("Input should be a valid URL", "url_parsing")
    else if (field === "urls" && !(Array.isArray(value) && value.length > 0 && value.every(isUrl))) {
      bad("Input should be a list of URLs", "list_type")
    }
  }
  return problems
}
