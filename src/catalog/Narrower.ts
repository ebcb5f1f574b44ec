import { Either, ParseResult, Schema } from "effect"
import type { UpstreamLimits } from "../channel/contract/Adapter.ts"
import {
  AspectRatio,
  Durations,
  type ModeCapability,
  Range,
  ReferenceMode,
  type VideoModelCapability
} from "./contract/Capabilities.ts"

/**
 * What one route of a video model takes when it is narrower than the
 * family's table (the spec's note on famS 2.5: the table's counts are the
 * gateway's ceilings; a narrower live capability is refused with a specific
 * validation error before generation starts), and what its upstream cannot
 * take or always does: no soundtrack (`audio: "never"`), always one
 * (`"always"`), no last frame (`last_frame: false`). An operator writes it
 * on the model's route in `models.json`:
 * `{ "channel": "ark", "narrower": { "durations": { "min": 4, "max": 12 }, "audio": "never" } }`.
 * Only narrowing is allowed: a value the model's table, or the route's
 * adapter (UpstreamLimits), does not already accept is a configuration error
 * at boot.
 */
export const NarrowerCapability = Schema.Struct({
  durations: Schema.optional(Durations),
  aspect_ratios: Schema.optional(Schema.NonEmptyArray(AspectRatio)),
  modes: Schema.optional(Schema.partial(Schema.Record({
    key: ReferenceMode,
    value: Schema.Struct({
      images: Schema.optional(Range),
      videos: Schema.optional(Range),
      audios: Schema.optional(Range),
      total: Schema.optional(Schema.Int.pipe(Schema.positive()))
    })
  }))),
  audio: Schema.optional(Schema.Literal("never", "always")),
  last_frame: Schema.optional(Schema.Literal(false))
}).annotations({ parseOptions: { onExcessProperty: "error" } })
export type NarrowerCapability = typeof NarrowerCapability.Type

/** What a route takes beyond its capability table: the soundtrack and a last frame. */
export interface RouteLimits {
  /** `never`: only silent videos (`output.generate_audio` false); `always`: only with a soundtrack. */
  readonly audio?: "never" | "always" | undefined
  /** false: no last frame in `frame` mode (a first frame only). */
  readonly lastFrame: boolean
  /** true: a first frame is required (its upstream makes no video from text alone). */
  readonly firstFrameRequired?: boolean | undefined
}

/** A route as the catalog reads it: the model's table as the route takes it, and its other limits. */
export interface NarrowedRoute {
  readonly capability: VideoModelCapability
  readonly limits: RouteLimits
}

const accepts = (durations: Durations, d: number) =>
  "values" in durations ? durations.values.includes(d) : d >= durations.min && d <= durations.max
const everyDuration = (durations: Durations) =>
  "values" in durations
    ? durations.values
    : Array.from({ length: durations.max - durations.min + 1 }, (_, i) => durations.min + i)
const within = (inner: Range, outer: Range) =>
  inner.min >= outer.min && inner.max <= outer.max && inner.min <= inner.max
const describe = (durations: Durations) =>
  "values" in durations ? durations.values.join(", ") : `${durations.min} to ${durations.max}`

/** Seconds as the table writes them: a range when they follow on, else the values. */
const compact = (seconds: ReadonlyArray<number>): Durations => {
  const sorted = [...new Set(seconds)].sort((a, b) => a - b)
  const first = sorted[0]!
  const last = sorted[sorted.length - 1]!
  // One value is a list of one ("5 s", not "5 to 5 s").
  return last - first + 1 === sorted.length && sorted.length > 1
    ? { min: first, max: last }
    : { values: sorted as unknown as readonly [number, ...Array<number>] }
}

/** The model's table as the route's upstream takes it (the adapter's limits), or why it takes nothing of it. */
const upstreamBase = (
  model: VideoModelCapability,
  upstream: UpstreamLimits
): Either.Either<VideoModelCapability, string> => {
  if (upstream.resolutions !== undefined && !upstream.resolutions.includes(model.resolution)) {
    return Either.left(
      `its upstream makes no ${model.resolution} videos (it makes ${upstream.resolutions.join(", ") || "none"})`
    )
  }
  let durations = model.durations
  if (upstream.durations !== undefined) {
    const all = everyDuration(model.durations)
    const common = all.filter((d) => upstream.durations!.includes(d))
    if (common.length === 0) {
      return Either.left(
        `its upstream takes none of the model's durations (it takes ${compactWords(upstream.durations)} s)`
      )
    }
    if (common.length < all.length) durations = compact(common)
  }
  let ratios = model.aspect_ratios
  if (upstream.aspectRatios !== undefined) {
    const common = model.aspect_ratios.filter((r) => upstream.aspectRatios!.includes(r))
    if (common.length === 0) {
      return Either.left(
        `its upstream takes none of the model's aspect ratios (it takes ${upstream.aspectRatios.join(", ")})`
      )
    }
    if (common.length < model.aspect_ratios.length) ratios = common as unknown as typeof model.aspect_ratios
  }
  return Either.right(
    durations === model.durations && ratios === model.aspect_ratios
      ? model
      : { ...model, durations, aspect_ratios: ratios }
  )
}
const compactWords = (seconds: ReadonlyArray<number>) => seconds.length === 0 ? "none" : describe(compact(seconds))

/**
 * The route as the catalog reads it, from its adapter's limits (`upstream`,
 * UpstreamLimits) and its own `narrower` as written (`raw`), or why they do
 * not fit (a message for the boot error). Undefined when the route takes
 * everything the model's table does.
 */
export const narrowRoute = (
  model: VideoModelCapability,
  upstream: UpstreamLimits | undefined,
  raw: unknown
): Either.Either<NarrowedRoute | undefined, string> => {
  if (upstream === undefined && raw === undefined) return Either.right(undefined)
  const based = upstream === undefined ? Either.right(model) : upstreamBase(model, upstream)
  if (Either.isLeft(based)) return Either.left(based.left)
  const base = based.right
  const fromUpstream: RouteLimits = {
    ...(upstream?.audio !== undefined ? { audio: upstream.audio } : {}),
    lastFrame: upstream?.lastFrame ?? true,
    ...(upstream?.firstFrame === "required" ? { firstFrameRequired: true } : {})
  }
  if (raw === undefined) {
    const same = base === model && fromUpstream.audio === undefined && fromUpstream.lastFrame &&
      !fromUpstream.firstFrameRequired
    return Either.right(same ? undefined : { capability: base, limits: fromUpstream })
  }
  const narrowed = narrowCapability(model, base, raw)
  if (Either.isLeft(narrowed)) return Either.left(`narrower: ${narrowed.left}`)
  const { capability, narrower } = narrowed.right
  if (narrower.audio !== undefined && fromUpstream.audio !== undefined && narrower.audio !== fromUpstream.audio) {
    return Either.left(
      `narrower: audio: "${narrower.audio}", but its upstream's videos ${
        fromUpstream.audio === "never" ? "are always silent" : "always have a soundtrack"
      }`
    )
  }
  const audio = narrower.audio ?? fromUpstream.audio
  return Either.right({
    capability,
    limits: {
      ...(audio !== undefined ? { audio } : {}),
      lastFrame: fromUpstream.lastFrame && narrower.last_frame !== false,
      ...(fromUpstream.firstFrameRequired ? { firstFrameRequired: true } : {})
    }
  })
}

/**
 * The model's table (`base`: as the route's upstream takes it) narrowed by
 * the route's `narrower`, or why it is not narrower.
 */
const narrowCapability = (
  model: VideoModelCapability,
  base: VideoModelCapability,
  raw: unknown
): Either.Either<{ capability: VideoModelCapability; narrower: NarrowerCapability }, string> => {
  const decoded = Schema.decodeUnknownEither(NarrowerCapability)(raw)
  if (Either.isLeft(decoded)) return Either.left(ParseResult.TreeFormatter.formatErrorSync(decoded.left))
  const narrower = decoded.right
  const durations = narrower.durations ?? base.durations
  if (!everyDuration(durations).every((d) => accepts(model.durations, d))) {
    return Either.left("durations: wider than the model's")
  }
  if (!everyDuration(durations).every((d) => accepts(base.durations, d))) {
    return Either.left(`durations: wider than its upstream takes (${describe(base.durations)} s)`)
  }
  const ratios = narrower.aspect_ratios ?? base.aspect_ratios
  const wider = ratios.find((r) => !model.aspect_ratios.includes(r))
  if (wider !== undefined) return Either.left(`aspect_ratios: "${wider}" is not one of the model's`)
  const beyond = ratios.find((r) => !base.aspect_ratios.includes(r))
  if (beyond !== undefined) {
    return Either.left(
      `aspect_ratios: its upstream does not take "${beyond}" (it takes ${base.aspect_ratios.join(", ")})`
    )
  }
  const modes: Partial<Record<ReferenceMode, ModeCapability>> = { ...model.modes }
  const narrowed = Object.entries(narrower.modes ?? {}) as Array<[ReferenceMode, Partial<ModeCapability> | undefined]>
  for (const [mode, counts] of narrowed) {
    const known = model.modes[mode]
    if (known === undefined || counts === undefined) return Either.left(`modes: the model has no "${mode}" mode`)
    for (const kind of ["images", "videos", "audios"] as const) {
      const range = counts[kind]
      if (range !== undefined && !within(range, known[kind])) {
        return Either.left(`modes.${mode}.${kind}: wider than the model's`)
      }
    }
    if (counts.total !== undefined && counts.total > known.total) {
      return Either.left(`modes.${mode}.total: above the model's`)
    }
    modes[mode] = { ...known, ...counts }
  }
  return Either.right({
    capability: {
      ...model,
      durations,
      // The default stays the model's: a request is stored as the model read it, whichever channel takes it.
      aspect_ratios: ratios,
      modes
    },
    narrower
  })
}
