/**
 * What the fake Veo refuses in a create body, after docs/adapters/veo.md
 * (Requests, Veo's own limits): the combinations Google documents, images in
 * either spelling (`bytesBase64Encoded` or `inlineData`), and, on the Gemini
 * API, the parameters the SDK refuses there (`generateAudio`, `seed`).
 */

const isImage = (image: any) => {
  if (typeof image !== "object" || image === null) return false
  const b64 = image.bytesBase64Encoded ?? image.inlineData?.data
  const mime = image.mimeType ?? image.inlineData?.mimeType
  return typeof b64 === "string" && b64.length > 0 && /^image\/(png|jpeg|webp)$/.test(mime) &&
    /^[A-Za-z0-9+/]+=*$/.test(b64)
}

export const bodyProblem = (body: any, api: "gemini" | "vertex"): string | undefined => {
  if (typeof body !== "object" || body === null || !Array.isArray(body.instances) || body.instances.length !== 1) {
    return "instances must hold one instance"
  }
  const inst = body.instances[0]
  const p = body.parameters ?? {}
  if (typeof inst.prompt !== "string" || inst.prompt.length === 0) return "prompt is required"
  const duration = Number(p.durationSeconds ?? 8)
  if (![4, 6, 8].includes(duration)) return "durationSeconds must be 4, 6 or 8"
  if (p.aspectRatio !== undefined && !["16:9", "9:16"].includes(p.aspectRatio)) return "bad aspectRatio"
  if (p.resolution !== undefined && !["720p", "1080p", "4k"].includes(p.resolution)) return "bad resolution"
  const refs = inst.referenceImages
  if ((p.resolution === "1080p" || p.resolution === "4k" || refs !== undefined) && duration !== 8) {
    return "durationSeconds must be 8 with 1080p, 4k or reference images"
  }
  if (refs !== undefined) {
    if (!Array.isArray(refs) || refs.length < 1 || refs.length > 3) return "up to 3 referenceImages"
    if (inst.image !== undefined || inst.lastFrame !== undefined) return "referenceImages cannot be combined with image"
    if (!refs.every((r: any) => isImage(r?.image) && r.referenceType === "asset")) return "bad referenceImages"
  }
  if (inst.image !== undefined && !isImage(inst.image)) return "bad image"
  if (inst.lastFrame !== undefined && (!isImage(inst.lastFrame) || inst.image === undefined)) {
    return "lastFrame requires image"
  }
  if (p.sampleCount !== undefined && p.sampleCount !== 1) return "sampleCount must be 1 here"
  if (api === "gemini" && (p.generateAudio !== undefined || p.seed !== undefined)) {
    return "generateAudio and seed are not supported by the Gemini API"
  }
  if (p.seed !== undefined && (!Number.isInteger(p.seed) || p.seed < 0 || p.seed > 4_294_967_295)) return "bad seed"
  return undefined
}
