import { createHash } from "node:crypto"

/**
 * The input schemas of the Replicate models the fake runs (test/fakes/replicate.ts),
 * as their API schemas on replicate.com define them: a field of another type,
 * out of range, or not in the schema is refused with Replicate's 422 body, so
 * an adapter that maps a request wrongly fails its test.
 */

type Field =
  | { readonly type: "string"; readonly required?: boolean; readonly enum?: ReadonlyArray<string> }
  | { readonly type: "uri"; readonly required?: boolean }
  | { readonly type: "uris"; readonly max: number }
  | { readonly type: "integer"; readonly min?: number; readonly max?: number; readonly enum?: ReadonlyArray<number> }
  | { readonly type: "boolean" }

export interface FakeModel {
  readonly kind: "video" | "image"
  readonly input: Readonly<Record<string, Field>>
}

const prompt = { type: "string", required: true } as const
const veo = (references: boolean): FakeModel => ({
  kind: "video",
  input: {
    prompt,
    image: { type: "uri" },
    last_frame: { type: "uri" },
    ...(references ? { reference_images: { type: "uris", max: 3 } } : {}),
    duration: { type: "integer", enum: [4, 6, 8] },
    resolution: { type: "string", enum: ["720p", "1080p"] },
    aspect_ratio: { type: "string", enum: ["16:9", "9:16"] },
    generate_audio: { type: "boolean" },
    negative_prompt: { type: "string" },
    seed: { type: "integer" }
  }
})

export const MODELS: Readonly<Record<string, FakeModel>> = {
  "bytedance/seedance-1-pro": {
    kind: "video",
    input: {
      prompt,
      image: { type: "uri" },
      last_frame_image: { type: "uri" },
      duration: { type: "integer", min: 2, max: 12 },
      resolution: { type: "string", enum: ["480p", "720p", "1080p"] },
      aspect_ratio: { type: "string", enum: ["16:9", "4:3", "1:1", "3:4", "9:16", "21:9", "9:21"] },
      fps: { type: "integer", enum: [24] },
      camera_fixed: { type: "boolean" },
      seed: { type: "integer" }
    }
  },
  "kwaivgi/kling-v3-video": {
    kind: "video",
    input: {
      prompt,
      start_image: { type: "uri" },
      end_image: { type: "uri" },
      mode: { type: "string", enum: ["standard", "pro"] },
      aspect_ratio: { type: "string", enum: ["16:9", "9:16", "1:1"] },
      duration: { type: "integer", min: 3, max: 15 },
      generate_audio: { type: "boolean" },
      multi_prompt: { type: "string" }
    }
  },
  // https://replicate.com/minimax/hailuo-02/api/schema: the frame gives the shape (no ratio); silent videos.
  "minimax/hailuo-02": {
    kind: "video",
    input: {
      prompt,
      first_frame_image: { type: "uri" },
      last_frame_image: { type: "uri" },
      duration: { type: "integer", enum: [6, 10] },
      resolution: { type: "string", enum: ["512p", "768p", "1080p"] },
      prompt_optimizer: { type: "boolean" }
    }
  },
  // https://replicate.com/wan-video/wan-2.5-i2v: a first frame required, up to 10 s, a soundtrack always made.
  "wan-video/wan-2.5-i2v": {
    kind: "video",
    input: {
      prompt,
      image: { type: "uri", required: true },
      duration: { type: "integer", min: 1, max: 10 },
      resolution: { type: "string", enum: ["480p", "720p", "1080p"] },
      negative_prompt: { type: "string" },
      seed: { type: "integer" },
      enable_prompt_expansion: { type: "boolean" },
      audio: { type: "uri" }
    }
  },
  "google/veo-3.1": veo(true),
  "google/veo-3.1-fast": veo(false),
  "google/nano-banana": {
    kind: "image",
    input: {
      prompt,
      image_input: { type: "uris", max: 10 },
      aspect_ratio: {
        type: "string",
        enum: ["match_input_image", "1:1", "2:3", "3:2", "3:4", "4:3", "4:5", "5:4", "9:16", "16:9", "21:9"]
      },
      output_format: { type: "string", enum: ["jpg", "png"] }
    }
  }
}

/** A version id per model, as `owner/name:version` routes name them. */
export const versionOf = (model: string) => createHash("sha256").update(model).digest("hex")
export const modelOfVersion = (version: string) => Object.keys(MODELS).find((m) => versionOf(m) === version)

const isUri = (v: unknown) => typeof v === "string" && /^(https?:\/\/|data:[\w/+.-]+;base64,)/.test(v)

/** Replicate's `invalid_fields`, empty when the input is valid for the model. */
export const invalidFields = (model: FakeModel, input: unknown) => {
  const problems: Array<{ type: string; field: string; description: string }> = []
  if (typeof input !== "object" || input === null) {
    return [{ type: "type", field: "input", description: "not an object" }]
  }
  const fields = input as Record<string, unknown>
  for (const [name, field] of Object.entries(model.input)) {
    if ((field.type === "string" || field.type === "uri") && field.required && fields[name] === undefined) {
      problems.push({ type: "required", field: `input.${name}`, description: `${name} is required` })
    }
  }
  for (const [name, value] of Object.entries(fields)) {
    const field = model.input[name]
    const bad = (description: string) => problems.push({ type: "invalid", field: `input.${name}`, description })
    if (field === undefined) bad("Additional property is not allowed")
    else if (field.type === "string") {
      if (typeof value !== "string") bad("Invalid type. Expected: string")
      else if (field.enum && !field.enum.includes(value)) bad(`must be one of ${field.enum.join(", ")}`)
    } else if (field.type === "uri") {
      if (!isUri(value)) bad("Does not match format 'uri'")
    } else if (field.type === "uris") {
      if (!Array.isArray(value) || !value.every(isUri)) bad("Invalid type. Expected: array of uri")
      else if (value.length > field.max) bad(`Array must have at most ${field.max} items`)
    } else if (field.type === "integer") {
      if (typeof value !== "number" || !Number.isInteger(value)) bad("Invalid type. Expected: integer")
      else if (field.enum && !field.enum.includes(value)) bad(`must be one of ${field.enum.join(", ")}`)
      else if ((field.min !== undefined && value < field.min) || (field.max !== undefined && value > field.max)) {
        bad(`must be between ${field.min} and ${field.max}`)
      }
    } else if (typeof value !== "boolean") bad("Invalid type. Expected: boolean")
  }
  return problems
}
