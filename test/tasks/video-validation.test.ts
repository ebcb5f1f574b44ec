// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import { Either } from "effect"
import { describe, expect, it } from "vitest"
import famK from "../../plugins/famK/index.ts"
import famS from "../../plugins/famS/index.ts"
import famV from "../../plugins/famV/index.ts"
import type { VideoModelCapability } from "../../src/catalog/contract/Capabilities.ts"
import { validateVideoRequest } from "../../src/catalog/VideoRequest.ts"

/**
 * `validateVideoRequest` against the API contract's tables (docs/api.md: Video
 * tasks, Video models, Video error codes; the reference object, the per-file
 * limits). The expected values below are copied from the contract by hand,
 * never read from the plugins, so a wrong plugin table fails here. Each rule is
 * walked at its accepted edge and at its rejected edge.
 */

const capabilities = new Map<string, VideoModelCapability>(
  [famS, famV, famK].flatMap((family) => family.models.map((m) => [m.id, m] as const))
)
const lookup = (id: string) => capabilities.get(id)

// ---- The spec's model tables ----------------------------------------------------------------

const S_PROVX = ["provx-famS-720p", "provx-famS-1080p"]
const S_20 = ["provy-famS-2.0-480p", "provy-famS-2.0-720p", "provy-famS-2.0-fast-480p", "provy-famS-2.0-fast-720p"]
const S_25 = ["provy-famS-2.5-480p", "provy-famS-2.5-720p"]
const V_STD = ["provx-famV-3.1-standard-720p", "provx-famV-3.1-standard-1080p"]
const V_FAST = ["provx-famV-3.1-fast-720p", "provx-famV-3.1-fast-1080p"]
const K_PLAIN = ["provx-famK-3.0-720p", "provx-famK-3.0-1080p"]
const K_OMNI = ["provx-famK-3.0-omni-720p", "provx-famK-3.0-omni-1080p"]
const FAM_S = [...S_PROVX, ...S_20, ...S_25]
const FAM_V = [...V_STD, ...V_FAST]
const FAM_K = [...K_PLAIN, ...K_OMNI]

const ALL_RATIOS = ["21:9", "16:9", "4:3", "1:1", "3:4", "9:16"]
const FOREIGN_RATIOS = ["2:1", "16:10", "16/9", ""]
const minDuration = (id: string) => (id.includes("famK") ? 3 : 4)

/** The 400 codes of the spec's Errors table; every one must be walked below. */
const ERRORS_400 = [
  "invalid_request",
  "video_duration_required",
  "invalid_video_duration",
  "invalid_video_aspect_ratio",
  "unsupported_reference_mode",
  "invalid_video_parameter",
  "invalid_provider_options",
  "unsupported_video_operation",
  "unsupported_video_model"
] as const
type Code = (typeof ERRORS_400)[number]

// ---- Request builders ------------------------------------------------------------------------

type Json = Record<string, unknown>
interface Over {
  readonly input?: Json
  readonly output?: Json
  readonly [top: string]: unknown
}

/** A minimal valid body, patched. `undefined` removes a field (the body goes through JSON). */
const req = (model: string, over: Over = {}): Json => {
  const { input, output, ...top } = over
  return JSON.parse(JSON.stringify({
    model,
    operation: "generation",
    input: { prompt: "a cat", ...input },
    output: { duration: minDuration(model), ...output },
    ...top
  }))
}
const without = (body: Json, key: string): Json => {
  const copy = { ...body }
  delete copy[key]
  return copy
}

const EXT = { i: "png", v: "mp4", a: "mp3" } as const
const ref = (kind: keyof typeof EXT, n: number, name?: string) => ({
  url: `https://example.com/${kind}${n}.${EXT[kind]}`,
  ...(name === undefined ? {} : { name })
})
const many = (kind: keyof typeof EXT, n: number) =>
  n === 0 ? undefined : Array.from({ length: n }, (_, i) => ref(kind, i + 1))

/**
 * An `input` patch with `images` images in all (`input.image` first unless
 * `inReferenceImages`), `videos` reference videos and `audios` reference audios.
 */
const refs = (mode: string | undefined, images: number, videos = 0, audios = 0, inReferenceImages = false): Json => {
  const first = !inReferenceImages && images > 0
  return {
    reference_mode: mode,
    image: first ? ref("i", 0) : undefined,
    reference_images: many("i", first ? images - 1 : images),
    reference_videos: many("v", videos),
    reference_audios: many("a", audios)
  }
}

// ---- Checking --------------------------------------------------------------------------------

type Expected = "ok" | Code | readonly [code: Code, messageIncludes: string]
type Case = readonly [label: string, body: unknown, expected: Expected]

const validate = (body: unknown) => validateVideoRequest(lookup, body)

const accepted = (body: unknown) => {
  const result = validate(body)
  if (Either.isLeft(result)) {
    throw new Error(`expected acceptance, got ${result.left.code}: ${result.left.message}`)
  }
  return result.right
}

const check = (body: unknown, expected: Expected) => {
  if (expected === "ok") return void accepted(body)
  const [code, text] = typeof expected === "string" ? [expected, undefined] : expected
  const result = validate(body)
  if (Either.isRight(result)) throw new Error(`expected ${code}, but the request was accepted`)
  expect({ status: result.left.status, code: result.left.code }).toEqual({ status: 400, code })
  if (text !== undefined) expect(result.left.message).toContain(text)
}

const codesSeen = new Set<string>()
/** Registers the cases (for the Errors-table coverage check) and hands them to `it.each`. */
const table = (cases: ReadonlyArray<Case>): Array<Case> => {
  for (const [, , expected] of cases) codesSeen.add(typeof expected === "string" ? expected : expected[0])
  return [...cases]
}
let caseCount = 0
const run = (cases: ReadonlyArray<Case>) => {
  caseCount += cases.length
  it.each(table(cases))("%s", (_label, body, expected) => check(body, expected))
}

// ---- Case generators shared by the families --------------------------------------------------

const durationCases = (ids: ReadonlyArray<string>, ok: ReadonlyArray<number>, bad: ReadonlyArray<number>): Case[] =>
  ids.flatMap((id) => [
    ...ok.map((d): Case => [`${id}: duration ${d} accepted`, req(id, { output: { duration: d } }), "ok"]),
    ...bad.map((d): Case => [
      `${id}: duration ${d} rejected`,
      req(id, { output: { duration: d } }),
      "invalid_video_duration"
    ])
  ])

const ratioCases = (ids: ReadonlyArray<string>, allowed: ReadonlyArray<string>): Case[] =>
  ids.flatMap((id) =>
    [...ALL_RATIOS, ...FOREIGN_RATIOS].map((r): Case => [
      `${id}: aspect_ratio "${r}"`,
      req(id, { output: { aspect_ratio: r } }),
      allowed.includes(r) ? "ok" : "invalid_video_aspect_ratio"
    ])
  )

/** Supported modes get a valid request of that mode; every other mode, known or not, is refused. */
const modeCases = (ids: ReadonlyArray<string>, supported: Partial<Record<string, Over>>): Case[] =>
  ids.flatMap((id) =>
    ["frame", "media", "images", "foo", "FRAME", "constructor", "toString", "__proto__"].map((mode): Case => {
      const valid = Object.hasOwn(supported, mode) ? supported[mode] : undefined
      return valid
        ? [`${id}: reference_mode ${mode} accepted`, req(id, valid), "ok"]
        : [
          `${id}: reference_mode ${mode} refused`,
          req(id, { input: refs(mode, 1, 0, 0, true) }),
          "unsupported_reference_mode"
        ]
    })
  )

const PROTECTED = [
  "model",
  "prompt",
  "duration",
  "aspect_ratio",
  "resolution",
  "image",
  "reference_images",
  "reference_videos",
  "reference_audios",
  "video"
]

/** Rules of the request as a whole, walked on one model of a family. */
const commonCases = (
  id: string,
  namespace: string,
  options: { valid: Json; wrongType: Json; foreignNamespace: string }
): Case[] => {
  // No reference_mode: each model takes its default or inferred mode for two images.
  const first = (image: Json): Over => ({ input: { image } })
  const named = (a: string, b: string): Over => ({
    input: { image: ref("i", 0, a), reference_images: [ref("i", 1, b)] }
  })
  return [
    // model and operation
    [`${id}: minimal body`, req(id), "ok"],
    [`${id}: missing model`, req(id, { model: undefined }), "invalid_request"],
    [`${id}: empty model`, req(id, { model: "" }), "invalid_request"],
    [`${id}: missing operation`, req(id, { operation: undefined }), "invalid_request"],
    [`${id}: operation "generate"`, req(id, { operation: "generate" }), "invalid_request"],
    ...["edit", "extension", "remix"].map((op): Case => [
      `${id}: operation ${op}`,
      req(id, { operation: op }),
      "unsupported_video_operation"
    ]),
    [`${id}: model id with another resolution`, req(id.replace(/\d+p$/, "4k")), "unsupported_video_model"],
    [`${id}: model id in another case`, req(id.toUpperCase()), "unsupported_video_model"],

    // strictness
    [`${id}: body is an array`, [req(id)], "invalid_request"],
    [`${id}: unknown top-level field`, req(id, { webhook_url: "https://example.com/hook" }), "invalid_request"],
    [`${id}: misspelled top-level field`, req(id, { client_reference: "x" }), "invalid_request"],
    [`${id}: missing input`, without(req(id), "input"), "invalid_request"],
    [`${id}: unknown input field`, req(id, { input: { negative_prompt: "blur" } }), "invalid_request"],
    [`${id}: input.video`, req(id, { input: { video: ref("v", 0) } }), "invalid_request"],
    [`${id}: unknown output field`, req(id, { output: { fps: 24 } }), "invalid_request"],
    [`${id}: output.video_duration`, req(id, { output: { video_duration: 5 } }), "invalid_request"],

    // prompt
    [`${id}: missing prompt`, req(id, { input: { prompt: undefined } }), "invalid_request"],
    [`${id}: empty prompt`, req(id, { input: { prompt: "" } }), "invalid_request"],
    [`${id}: whitespace-only prompt`, req(id, { input: { prompt: " \t\n\u3000 " } }), "invalid_request"],
    [`${id}: prompt not a string`, req(id, { input: { prompt: 42 } }), "invalid_request"],
    [`${id}: prompt of 1200 ASCII characters`, req(id, { input: { prompt: "a".repeat(1200) } }), "ok"],
    [
      `${id}: prompt of 1201 ASCII characters`,
      req(id, { input: { prompt: "a".repeat(1201) } }),
      "invalid_video_parameter"
    ],
    [`${id}: prompt of 1200 astral characters`, req(id, { input: { prompt: "😀".repeat(1200) } }), "ok"],
    [
      `${id}: prompt of 1201 astral characters`,
      req(id, { input: { prompt: "😀".repeat(1201) } }),
      "invalid_video_parameter"
    ],

    // duration presence and type
    [`${id}: missing output.duration`, req(id, { output: { duration: undefined } }), "video_duration_required"],
    [`${id}: missing output`, without(req(id), "output"), "video_duration_required"],
    [
      `${id}: output with aspect_ratio but no duration`,
      req(id, { output: { duration: undefined, aspect_ratio: "16:9" } }),
      "video_duration_required"
    ],
    [`${id}: duration 5.5`, req(id, { output: { duration: 5.5 } }), "invalid_request"],
    [`${id}: duration "8"`, req(id, { output: { duration: "8" } }), "invalid_request"],
    [`${id}: duration true`, req(id, { output: { duration: true } }), "invalid_request"],

    // output fields
    [`${id}: generate_audio false`, req(id, { output: { generate_audio: false } }), "ok"],
    [`${id}: generate_audio "yes"`, req(id, { output: { generate_audio: "yes" } }), "invalid_request"],
    [`${id}: output.resolution`, req(id, { output: { resolution: "720p" } }), "invalid_video_parameter"],

    // provider_options
    [`${id}: valid provider_options`, req(id, { provider_options: { [namespace]: options.valid } }), "ok"],
    [`${id}: empty provider_options`, req(id, { provider_options: {} }), "ok"],
    [`${id}: provider_options not an object`, req(id, { provider_options: [] }), "invalid_provider_options"],
    [`${id}: namespace not an object`, req(id, { provider_options: { [namespace]: 1 } }), "invalid_provider_options"],
    [
      `${id}: resolution in provider_options`,
      req(id, { provider_options: { [namespace]: { resolution: "1080p" } } }),
      "invalid_provider_options"
    ],
    [
      `${id}: old provider_options.${namespace}.generate_audio`,
      req(id, { provider_options: { [namespace]: { generate_audio: false } } }),
      ["invalid_provider_options", "output.generate_audio"]
    ],
    [
      `${id}: old provider_options.${namespace}.reference_mode`,
      req(id, { provider_options: { [namespace]: { reference_mode: "frame" } } }),
      ["invalid_provider_options", "input.reference_mode"]
    ],
    [
      `${id}: old generate_audio under another namespace`,
      req(id, { provider_options: { [options.foreignNamespace]: { generate_audio: true } } }),
      ["invalid_provider_options", "output.generate_audio"]
    ],
    [`${id}: unknown namespace`, req(id, { provider_options: { other: {} } }), "invalid_provider_options"],
    [
      `${id}: namespace of another family`,
      req(id, { provider_options: { [options.foreignNamespace]: {} } }),
      "invalid_provider_options"
    ],
    [`${id}: namespace "constructor"`, req(id, { provider_options: { constructor: {} } }), "invalid_provider_options"],
    [
      `${id}: namespace "__proto__"`,
      JSON.parse(JSON.stringify(req(id)).replace(/}$/, `,"provider_options":{"__proto__":{}}}`)),
      "invalid_provider_options"
    ],
    [
      `${id}: unknown field in namespace`,
      req(id, { provider_options: { [namespace]: { steps: 30 } } }),
      "invalid_provider_options"
    ],
    [
      `${id}: field "toString" in namespace`,
      req(id, { provider_options: { [namespace]: { toString: 1 } } }),
      "invalid_provider_options"
    ],
    [
      `${id}: wrong option type`,
      req(id, { provider_options: { [namespace]: options.wrongType } }),
      "invalid_provider_options"
    ],
    ...PROTECTED.map((field): Case => [
      `${id}: provider_options.${namespace}.${field}`,
      req(id, { provider_options: { [namespace]: { [field]: "x" } } }),
      "invalid_provider_options"
    ]),

    // reference source objects
    [`${id}: http URL`, req(id, first({ url: "http://example.com/a.png" })), "ok"],
    [`${id}: signed https URL`, req(id, first({ url: "https://cdn.example.com/a.png?X-Sig=abc&exp=1" })), "ok"],
    ...[
      "ftp://example.com/a.png",
      "data:image/png;base64,iVBORw0KGgo=",
      "/uploads/a.png",
      "a.png",
      "file:///x",
      "//example.com/a.png",
      "https://",
      ""
    ]
      .map((url): Case => [`${id}: reference URL "${url}"`, req(id, first({ url })), "invalid_request"]),
    [`${id}: URL not a string`, req(id, first({ url: 5 })), "invalid_request"],
    [`${id}: reference without url`, req(id, first({ name: "a" })), "invalid_request"],
    [
      `${id}: reference as a bare string`,
      req(id, { input: { image: "https://example.com/a.png" } }),
      "invalid_request"
    ],
    [`${id}: provider + file_id reference`, req(id, first({ provider: "x", file_id: "f" })), "invalid_request"],
    [`${id}: unknown field in reference`, req(id, first({ ...ref("i", 0), file_id: "f" })), "invalid_request"],
    [`${id}: name not a string`, req(id, first({ ...ref("i", 0), name: 1 })), "invalid_request"],
    [`${id}: reference_images []`, req(id, { input: { reference_images: [] } }), "invalid_request"],
    [`${id}: reference_images not an array`, req(id, { input: { reference_images: ref("i", 1) } }), "invalid_request"],
    [`${id}: distinct names`, req(id, named("a", "b")), "ok"],
    [`${id}: duplicate names`, req(id, named("a", "a")), "invalid_request"],

    // client_reference_id and metadata
    [`${id}: client_reference_id of 191`, req(id, { client_reference_id: "c".repeat(191) }), "ok"],
    [`${id}: client_reference_id of 192`, req(id, { client_reference_id: "c".repeat(192) }), "invalid_request"],
    [`${id}: client_reference_id not a string`, req(id, { client_reference_id: 7 }), "invalid_request"],
    [`${id}: metadata object`, req(id, { metadata: { order: 7, tags: ["a"], nested: { x: null } } }), "ok"],
    [`${id}: metadata {}`, req(id, { metadata: {} }), "ok"],
    [`${id}: metadata array`, req(id, { metadata: [1, 2] }), "invalid_request"],
    [`${id}: metadata string`, req(id, { metadata: "x" }), "invalid_request"],
    [`${id}: metadata null`, req(id, { metadata: null }), "invalid_request"]
  ]
}

// ---- The tables ------------------------------------------------------------------------------

describe("video request validation", () => {
  it("the plugins declare exactly the spec's model IDs", () => {
    expect(famS.models.map((m) => m.id).sort()).toEqual([...FAM_S].sort())
    expect(famV.models.map((m) => m.id).sort()).toEqual([...FAM_V].sort())
    expect(famK.models.map((m) => m.id).sort()).toEqual([...FAM_K].sort())
  })

  it.each([...FAM_S, ...FAM_V, ...FAM_K])("%s: minimal body accepted with the defaults", (id) => {
    const v = accepted(req(id))
    expect(v).toMatchObject({
      model: id,
      operation: "generation",
      prompt: "a cat",
      image: null,
      referenceImages: [],
      referenceVideos: [],
      referenceAudios: [],
      duration: minDuration(id),
      aspectRatio: "16:9",
      generateAudio: true,
      clientReferenceId: null,
      metadata: null,
      providerOptions: {}
    })
    // famV and famK default to `frame`; a text-only famS request names no mode.
    expect(v.mode).toBe(id.includes("famS") ? null : "frame")
  })

  it("echoes what it accepts", () => {
    const prompt = "😀".repeat(1200)
    expect(prompt.length).toBe(2400)
    const v = accepted(req("provy-famS-2.5-720p", {
      input: { prompt, ...refs("media", 2, 1, 1) },
      output: { duration: 30, aspect_ratio: "9:16", generate_audio: false },
      client_reference_id: "order-7",
      metadata: { a: [1] },
      provider_options: { famS: { seed: 7, camera_fixed: true } }
    }))
    expect(v).toMatchObject({
      prompt,
      mode: "media",
      image: ref("i", 0),
      referenceImages: [ref("i", 1)],
      referenceVideos: [ref("v", 1)],
      referenceAudios: [ref("a", 1)],
      duration: 30,
      aspectRatio: "9:16",
      generateAudio: false,
      clientReferenceId: "order-7",
      metadata: { a: [1] },
      providerOptions: { famS: { seed: 7, camera_fixed: true } }
    })
  })

  describe("famS", () => {
    run([
      ...durationCases(S_20, [4, 15], [3, 16, 0, -4, 30]),
      ...durationCases(S_25, [4, 30], [3, 31]),
      ...ratioCases(FAM_S, ALL_RATIOS),
      ...modeCases(S_PROVX, { frame: { input: refs("frame", 2) }, media: { input: refs("media", 1, 1, 1) } }),
      ...modeCases(S_20, { media: { input: refs("media", 1, 1, 1) } }),
      ...modeCases(S_25, { frame: { input: refs("frame", 1) }, media: { input: refs("media", 1, 1, 1) } }),

      // provx-famS-*: frame up to 2 images (input.image counts); media 9 / 3 / 3, 12 in all
      ...S_PROVX.flatMap((id): Case[] => [
        [`${id}: frame without images (text-only)`, req(id, { input: refs("frame", 0) }), "ok"],
        [`${id}: frame, first frame only`, req(id, { input: refs("frame", 1) }), "ok"],
        [`${id}: frame, image + 1 reference image`, req(id, { input: refs("frame", 2) }), "ok"],
        [`${id}: frame, 2 reference images`, req(id, { input: refs("frame", 2, 0, 0, true) }), "ok"],
        [`${id}: frame, image + 2 reference images`, req(id, { input: refs("frame", 3) }), "invalid_request"],
        [`${id}: frame, 3 reference images`, req(id, { input: refs("frame", 3, 0, 0, true) }), "invalid_request"],
        [`${id}: frame with a reference video`, req(id, { input: refs("frame", 1, 1) }), "invalid_request"],
        [`${id}: frame with a reference audio`, req(id, { input: refs("frame", 1, 0, 1) }), "invalid_request"],
        [`${id}: media, 9 images`, req(id, { input: refs("media", 9) }), "ok"],
        [`${id}: media, 10 images`, req(id, { input: refs("media", 10) }), "invalid_request"],
        [
          `${id}: media, 10 reference images without input.image`,
          req(id, { input: refs("media", 10, 0, 0, true) }),
          "invalid_request"
        ],
        [`${id}: media, 3 videos`, req(id, { input: refs("media", 0, 3) }), "ok"],
        [`${id}: media, 4 videos`, req(id, { input: refs("media", 0, 4) }), "invalid_request"],
        [`${id}: media, 3 audios`, req(id, { input: refs("media", 1, 0, 3) }), "ok"],
        [`${id}: media, 4 audios`, req(id, { input: refs("media", 1, 0, 4) }), "invalid_request"],
        [`${id}: media, 9 + 3 + 0 = 12 references`, req(id, { input: refs("media", 9, 3) }), "ok"],
        [`${id}: media, 6 + 3 + 3 = 12 references`, req(id, { input: refs("media", 6, 3, 3) }), "ok"],
        [`${id}: media, 9 + 3 + 1 = 13 references`, req(id, { input: refs("media", 9, 3, 1) }), "invalid_request"],
        [`${id}: media, 7 + 3 + 3 = 13 references`, req(id, { input: refs("media", 7, 3, 3) }), "invalid_request"],
        [`${id}: media, 9 + 3 + 3 = 15 references`, req(id, { input: refs("media", 9, 3, 3) }), "invalid_request"]
      ]),

      // provy-famS-2.0-* / 2.0-fast-*: media only, 4 / 3 / 1, 8 in all, audio needs a visual.
      // 4 + 3 + 1 = 8: the total cannot be exceeded without exceeding a per-kind ceiling.
      ...S_20.flatMap((id): Case[] => [
        [`${id}: 4 images`, req(id, { input: refs("media", 4) }), "ok"],
        [`${id}: 4 images, reference_mode omitted`, req(id, { input: refs(undefined, 4) }), "ok"],
        [`${id}: 5 images`, req(id, { input: refs("media", 5) }), "invalid_request"],
        [
          `${id}: 5 reference images without input.image`,
          req(id, { input: refs("media", 5, 0, 0, true) }),
          "invalid_request"
        ],
        [`${id}: 3 videos`, req(id, { input: refs("media", 0, 3) }), "ok"],
        [`${id}: 4 videos`, req(id, { input: refs("media", 0, 4) }), "invalid_request"],
        [`${id}: 1 audio with an image`, req(id, { input: refs("media", 1, 0, 1) }), "ok"],
        [`${id}: 1 audio with a video`, req(id, { input: refs("media", 0, 1, 1) }), "ok"],
        [`${id}: 2 audios`, req(id, { input: refs("media", 1, 0, 2) }), "invalid_request"],
        [`${id}: 4 + 3 + 1 = 8 references`, req(id, { input: refs("media", 4, 3, 1) }), "ok"],
        [`${id}: audio alone`, req(id, { input: refs("media", 0, 0, 1) }), "invalid_video_parameter"],
        [
          `${id}: audio alone, reference_mode omitted`,
          req(id, { input: refs(undefined, 0, 0, 1) }),
          "invalid_video_parameter"
        ]
      ]),

      // provy-famS-2.5-*: frame 1 to 2 images only; media 30 / 10 / 10, 50 in all, audio needs a visual.
      // 30 + 10 + 10 = 50: the total cannot be exceeded without exceeding a per-kind ceiling.
      ...S_25.flatMap((id): Case[] => [
        [`${id}: frame, 1 image`, req(id, { input: refs("frame", 1) }), "ok"],
        [`${id}: frame, 1 image in reference_images`, req(id, { input: refs("frame", 1, 0, 0, true) }), "ok"],
        [`${id}: frame, 2 images`, req(id, { input: refs("frame", 2) }), "ok"],
        [`${id}: frame, 3 images`, req(id, { input: refs("frame", 3) }), "invalid_request"],
        [`${id}: frame, 0 images`, req(id, { input: refs("frame", 0) }), "invalid_video_parameter"],
        [`${id}: frame with a reference video`, req(id, { input: refs("frame", 1, 1) }), "invalid_request"],
        [`${id}: frame with a reference audio`, req(id, { input: refs("frame", 1, 0, 1) }), "invalid_request"],
        [`${id}: media, 30 images`, req(id, { input: refs("media", 30) }), "ok"],
        [`${id}: media, 31 images`, req(id, { input: refs("media", 31) }), "invalid_request"],
        [`${id}: media, 10 videos`, req(id, { input: refs("media", 0, 10) }), "ok"],
        [`${id}: media, 11 videos`, req(id, { input: refs("media", 0, 11) }), "invalid_request"],
        [`${id}: media, 10 audios with a video`, req(id, { input: refs("media", 0, 1, 10) }), "ok"],
        [`${id}: media, 11 audios with a video`, req(id, { input: refs("media", 0, 1, 11) }), "invalid_request"],
        [`${id}: media, 30 + 10 + 10 = 50 references`, req(id, { input: refs("media", 30, 10, 10) }), "ok"],
        [`${id}: media, audio alone`, req(id, { input: refs("media", 0, 0, 2) }), "invalid_video_parameter"]
      ]),

      // names: unique across images, videos and audios
      ...([
        ["image and video", { image: ref("i", 0, "x"), reference_videos: [ref("v", 1, "x")] }],
        ["video and audio", { reference_videos: [ref("v", 1, "x")], reference_audios: [ref("a", 1, "x")] }],
        ["reference image and audio", { reference_images: [ref("i", 1, "x")], reference_audios: [ref("a", 1, "x")] }],
        ["two videos", { reference_videos: [ref("v", 1, "x"), ref("v", 2, "x")] }]
      ] as const).map(([what, input]): Case => [
        `provx-famS-720p: duplicate name across ${what}`,
        req("provx-famS-720p", { input: { reference_mode: "media", ...input } }),
        "invalid_request"
      ]),
      [
        "provx-famS-720p: distinct names across image, video and audio",
        req("provx-famS-720p", {
          input: {
            reference_mode: "media",
            image: ref("i", 0, "a"),
            reference_videos: [ref("v", 1, "b")],
            reference_audios: [ref("a", 1, "c")]
          }
        }),
        "ok"
      ],
      [
        "provx-famS-720p: reference_videos []",
        req("provx-famS-720p", { input: { reference_mode: "media", reference_videos: [] } }),
        "invalid_request"
      ],
      [
        "provx-famS-720p: reference_audios []",
        req("provx-famS-720p", { input: { ...refs("media", 1), reference_audios: [] } }),
        "invalid_request"
      ],
      [
        "provx-famS-720p: ftp video URL",
        req("provx-famS-720p", {
          input: { reference_mode: "media", reference_videos: [{ url: "ftp://example.com/v.mp4" }] }
        }),
        "invalid_request"
      ],
      [
        "provx-famS-720p: data: audio URL",
        req("provx-famS-720p", {
          input: { ...refs("media", 1), reference_audios: [{ url: "data:audio/mpeg;base64,AAAA" }] }
        }),
        "invalid_request"
      ],

      ...commonCases("provy-famS-2.0-480p", "famS", {
        valid: { seed: 42, camera_fixed: true },
        wrongType: { seed: "42" },
        foreignNamespace: "famV"
      }),
      ...commonCases("provx-famS-1080p", "famS", {
        valid: { seed: 0 },
        wrongType: { camera_fixed: "yes" },
        foreignNamespace: "famK"
      })
    ])
  })

  describe("famV", () => {
    run([
      ...durationCases(FAM_V, [4, 6, 8], [3, 5, 7, 10, 2, 0]),
      ...ratioCases(FAM_V, ["16:9", "9:16"]),
      ...modeCases(V_STD, {
        frame: { input: refs("frame", 2) },
        images: { input: refs("images", 3, 0, 0, true), output: { duration: 8 } }
      }),
      ...modeCases(V_FAST, { frame: { input: refs("frame", 2) } }),

      ...FAM_V.flatMap((id): Case[] => [
        [`${id}: frame, first frame only`, req(id, { input: refs("frame", 1) }), "ok"],
        [`${id}: frame, first and last frame`, req(id, { input: refs("frame", 2) }), "ok"],
        [`${id}: default mode, first and last frame`, req(id, { input: refs(undefined, 2) }), "ok"],
        [`${id}: frame, 3 images`, req(id, { input: refs("frame", 3) }), "invalid_request"],
        [`${id}: default mode, 3 images`, req(id, { input: refs(undefined, 3) }), "invalid_request"],
        [`${id}: frame with a reference video`, req(id, { input: refs("frame", 1, 1) }), "invalid_request"],
        [`${id}: default mode with a reference audio`, req(id, { input: refs(undefined, 0, 0, 1) }), "invalid_request"],
        [
          `${id}: images mode`,
          req(id, { input: refs("images", 1, 0, 0, true), output: { duration: 8 } }),
          id.includes("standard") ? "ok" : "unsupported_reference_mode"
        ],
        [`${id}: media mode`, req(id, { input: refs("media", 0, 1) }), "unsupported_reference_mode"]
      ]),

      // standard `images`: up to 3 images in reference_images, only with 8 s at 16:9
      ...V_STD.flatMap((id): Case[] => [
        [
          `${id}: images, 3 images, 8 s, 16:9`,
          req(id, { input: refs("images", 3, 0, 0, true), output: { duration: 8, aspect_ratio: "16:9" } }),
          "ok"
        ],
        [
          `${id}: images, 3 images, 8 s, default ratio`,
          req(id, { input: refs("images", 3, 0, 0, true), output: { duration: 8 } }),
          "ok"
        ],
        [
          `${id}: images, 1 image, 8 s`,
          req(id, { input: refs("images", 1, 0, 0, true), output: { duration: 8 } }),
          "ok"
        ],
        [
          `${id}: images, 4 images`,
          req(id, { input: refs("images", 4, 0, 0, true), output: { duration: 8 } }),
          "invalid_request"
        ],
        [
          `${id}: images, duration 6`,
          req(id, { input: refs("images", 3, 0, 0, true), output: { duration: 6 } }),
          "invalid_video_parameter"
        ],
        [
          `${id}: images, duration 4`,
          req(id, { input: refs("images", 3, 0, 0, true), output: { duration: 4 } }),
          "invalid_video_parameter"
        ],
        [
          `${id}: images, 9:16`,
          req(id, { input: refs("images", 3, 0, 0, true), output: { duration: 8, aspect_ratio: "9:16" } }),
          "invalid_video_parameter"
        ],
        [
          `${id}: images with a reference video`,
          req(id, { input: refs("images", 1, 1, 0, true), output: { duration: 8 } }),
          "invalid_request"
        ],
        [
          `${id}: images with a reference audio`,
          req(id, { input: refs("images", 1, 0, 1, true), output: { duration: 8 } }),
          "invalid_request"
        ]
      ]),

      ...commonCases("provx-famV-3.1-standard-720p", "famV", {
        valid: { seed: 4_294_967_295, negative_prompt: "blur" },
        wrongType: { seed: 1.5 },
        foreignNamespace: "famS"
      }),
      ...commonCases("provx-famV-3.1-fast-1080p", "famV", {
        valid: { negative_prompt: "blur" },
        wrongType: { negative_prompt: 1 },
        foreignNamespace: "famK"
      })
    ])
  })

  describe("famK", () => {
    run([
      ...durationCases(FAM_K, [3, 15, 8], [2, 16, 0, 30]),
      ...ratioCases(FAM_K, ["16:9", "9:16"]),
      ...modeCases(K_PLAIN, { frame: { input: refs("frame", 2) } }),
      ...modeCases(K_OMNI, { frame: { input: refs("frame", 2) }, images: { input: refs("images", 3, 0, 0, true) } }),

      ...FAM_K.flatMap((id): Case[] => [
        [`${id}: frame, no image (text-only)`, req(id, { input: refs("frame", 0) }), "ok"],
        [`${id}: frame, first frame`, req(id, { input: refs("frame", 1) }), "ok"],
        [`${id}: frame, first and last frame`, req(id, { input: refs("frame", 2) }), "ok"],
        [`${id}: default mode, first and last frame`, req(id, { input: refs(undefined, 2) }), "ok"],
        [`${id}: frame, 3 images`, req(id, { input: refs("frame", 3) }), "invalid_request"],
        [`${id}: frame with a reference video`, req(id, { input: refs("frame", 1, 1) }), "invalid_request"],
        [`${id}: default mode with a reference audio`, req(id, { input: refs(undefined, 1, 0, 1) }), "invalid_request"],
        [
          `${id}: images mode`,
          req(id, { input: refs("images", 1, 0, 0, true) }),
          id.includes("omni") ? "ok" : "unsupported_reference_mode"
        ],
        [`${id}: media mode`, req(id, { input: refs("media", 1, 1) }), "unsupported_reference_mode"],
        // reference names: at most 100 characters, non-empty names unique
        [`${id}: name of 100 characters`, req(id, { input: { image: ref("i", 0, "n".repeat(100)) } }), "ok"],
        [`${id}: name of 100 astral characters`, req(id, { input: { image: ref("i", 0, "😀".repeat(100)) } }), "ok"],
        [
          `${id}: name of 101 characters`,
          req(id, { input: { image: ref("i", 0, "n".repeat(101)) } }),
          "invalid_request"
        ],
        [
          `${id}: name of 101 characters in reference_images`,
          req(id, { input: { image: ref("i", 0), reference_images: [ref("i", 1, "n".repeat(101))] } }),
          "invalid_request"
        ],
        [
          `${id}: two empty names`,
          req(id, { input: { image: ref("i", 0, ""), reference_images: [ref("i", 1, "")] } }),
          "ok"
        ]
      ]),

      // omni `images`: 1 to 3 images in reference_images
      ...K_OMNI.flatMap((id): Case[] => [
        [
          `${id}: images, 3 images`,
          req(id, { input: refs("images", 3, 0, 0, true), output: { duration: 15, aspect_ratio: "9:16" } }),
          "ok"
        ],
        [`${id}: images, 4 images`, req(id, { input: refs("images", 4, 0, 0, true) }), "invalid_request"],
        [`${id}: images with a reference video`, req(id, { input: refs("images", 1, 1, 0, true) }), "invalid_request"],
        [
          `${id}: images, duplicate names`,
          req(id, { input: { reference_mode: "images", reference_images: [ref("i", 1, "a"), ref("i", 2, "a")] } }),
          "invalid_request"
        ]
      ]),

      ...commonCases("provx-famK-3.0-720p", "famK", {
        valid: { negative_prompt: "blur", cfg_scale: 0.5 },
        wrongType: { cfg_scale: "high" },
        foreignNamespace: "famS"
      }),
      ...commonCases("provx-famK-3.0-omni-1080p", "famK", {
        valid: { cfg_scale: 1 },
        wrongType: { negative_prompt: false },
        foreignNamespace: "famV"
      })
    ])
  })

  it("walks every 400 code of the spec's Errors table, and no other", () => {
    expect([...codesSeen].filter((c) => c !== "ok").sort()).toEqual([...ERRORS_400].sort())
    expect(caseCount).toBeGreaterThan(900)
  })
})
