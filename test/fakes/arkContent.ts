/**
 * The fake Ark's checks of a create body (docs/adapters/ark.md, Requests),
 * strict where Ark is: an unknown field, a role on the wrong item type, mixed
 * frame and reference modes, too many references, out-of-range values all
 * answer 400 `InvalidParameter` naming `param`, so an adapter that sends
 * anything Ark would refuse fails its test.
 */

export interface Problem {
  readonly message: string
  readonly param: string
}

const FIELDS = new Set([
  "model",
  "content",
  "callback_url",
  "return_last_frame",
  "service_tier",
  "execution_expires_after",
  "generate_audio",
  "draft",
  "tools",
  "safety_identifier",
  "priority",
  "resolution",
  "ratio",
  "duration",
  "frames",
  "seed",
  "camera_fixed",
  "watermark"
])
const ROLES: Record<string, ReadonlyArray<string>> = {
  image_url: ["first_frame", "last_frame", "reference_image"],
  video_url: ["reference_video"],
  audio_url: ["reference_audio"]
}
const RATIOS = ["16:9", "4:3", "1:1", "3:4", "9:16", "21:9", "adaptive"]
const RESOLUTIONS = ["480p", "720p", "1080p"]
const MAX = { reference_image: 9, reference_video: 3, reference_audio: 3 } as const

const isInt = (v: unknown, min: number, max: number) =>
  typeof v === "number" && Number.isInteger(v) && v >= min && v <= max

const problem = (param: string, message: string): Problem => ({ param, message: `${param}: ${message}` })

const contentItems = (content: unknown): Problem | undefined => {
  if (!Array.isArray(content) || content.length === 0) return problem("content", "must be a non-empty array")
  const roles: Record<string, number> = {}
  let texts = 0
  for (const item of content) {
    if (item?.type === "text") {
      if (typeof item.text !== "string" || item.text.length === 0) return problem("content.text", "must be a string")
      texts++
      continue
    }
    const allowed = ROLES[item?.type]
    if (allowed === undefined) return problem("content.type", `unknown type ${item?.type}`)
    const url = item[item.type]?.url
    if (typeof url !== "string" || !/^(https?:\/\/|data:|asset:\/\/)/.test(url)) {
      return problem(`content.${item.type}.url`, "must be a URL")
    }
    // One image alone needs no role (it is the first frame); everything else must say what it is.
    const role = item.role ?? (item.type === "image_url" ? "first_frame" : undefined)
    if (!allowed.includes(role)) return problem("content.role", `${role} is not a role of ${item.type}`)
    roles[role] = (roles[role] ?? 0) + 1
  }
  if (texts > 1) return problem("content", "at most one text item")
  const frames = (roles.first_frame ?? 0) + (roles.last_frame ?? 0)
  const references = (roles.reference_image ?? 0) + (roles.reference_video ?? 0) + (roles.reference_audio ?? 0)
  if (frames > 0 && references > 0) return problem("content.role", "frames and references cannot be mixed")
  if ((roles.first_frame ?? 0) > 1 || (roles.last_frame ?? 0) > 1) return problem("content.role", "one frame each")
  if (roles.last_frame && !roles.first_frame) return problem("content.role", "last_frame needs a first_frame")
  for (const [role, max] of Object.entries(MAX)) {
    if ((roles[role] ?? 0) > max) return problem("content.role", `at most ${max} ${role}`)
  }
  if (roles.reference_audio && !roles.reference_image && !roles.reference_video) {
    return problem("content.role", "reference_audio needs a reference image or video")
  }
  if (texts === 0 && frames + references === 0) return problem("content", "nothing to generate from")
  return undefined
}

export const contentProblem = (body: any): Problem | undefined => {
  if (body === null || typeof body !== "object") return problem("body", "must be an object")
  for (const field of Object.keys(body)) if (!FIELDS.has(field)) return problem(field, "unknown field")
  if (typeof body.model !== "string" || body.model.length === 0) return problem("model", "is required")
  const content = contentItems(body.content)
  if (content) return content
  if (body.ratio !== undefined && !RATIOS.includes(body.ratio)) return problem("ratio", "unsupported")
  if (body.resolution !== undefined && !RESOLUTIONS.includes(body.resolution)) {
    return problem("resolution", "unsupported")
  }
  if (body.duration !== undefined && body.duration !== -1 && !isInt(body.duration, 2, 30)) {
    return problem("duration", "out of range")
  }
  if (body.seed !== undefined && !isInt(body.seed, -1, 2 ** 32 - 1)) return problem("seed", "out of range")
  if (body.execution_expires_after !== undefined && !isInt(body.execution_expires_after, 3600, 259_200)) {
    return problem("execution_expires_after", "must be 3600 to 259200")
  }
  for (const flag of ["generate_audio", "camera_fixed", "watermark", "return_last_frame", "draft"]) {
    if (body[flag] !== undefined && typeof body[flag] !== "boolean") return problem(flag, "must be a boolean")
  }
  const referenced = body.content.some((item: any) => String(item.role ?? "").startsWith("reference_"))
  if (body.camera_fixed !== undefined && referenced) {
    return problem("camera_fixed", "is not supported with reference media")
  }
  return undefined
}
