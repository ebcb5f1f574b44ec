import { Either, ParseResult, Schema } from "effect"
import {
  AspectRatio,
  Durations,
  type ModeCapability,
  Range,
  ReferenceMode,
  type VideoModelCapability
} from "./contract/Capabilities.ts"

/**
 * What one channel of a video model takes when it is narrower than the
 * family's table (the spec's note on famS 2.5: the table's counts are the
 * gateway's ceilings; a narrower live capability is refused with a specific
 * validation error before generation starts). An operator writes it on the
 * model's route in `models.json`:
 * `{ "channel": "ark", "narrower": { "durations": { "min": 4, "max": 12 } } }`.
 * Only narrowing is allowed: a value the model's table does not already
 * accept is a configuration error at boot.
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
  })))
}).annotations({ parseOptions: { onExcessProperty: "error" } })
export type NarrowerCapability = typeof NarrowerCapability.Type

const accepts = (durations: Durations, d: number) =>
  "values" in durations ? durations.values.includes(d) : d >= durations.min && d <= durations.max
const everyDuration = (durations: Durations) =>
  "values" in durations
    ? durations.values
    : Array.from({ length: durations.max - durations.min + 1 }, (_, i) => durations.min + i)
const within = (inner: Range, outer: Range) =>
  inner.min >= outer.min && inner.max <= outer.max && inner.min <= inner.max

/**
 * The model's capability as one channel takes it, or why the narrower
 * settings are not narrower (a message for the boot error).
 */
export const narrowCapability = (
  model: VideoModelCapability,
  raw: unknown
): Either.Either<VideoModelCapability, string> => {
  const decoded = Schema.decodeUnknownEither(NarrowerCapability)(raw)
  if (Either.isLeft(decoded)) return Either.left(ParseResult.TreeFormatter.formatErrorSync(decoded.left))
  const narrower = decoded.right
  const durations = narrower.durations ?? model.durations
  if (!everyDuration(durations).every((d) => accepts(model.durations, d))) {
    return Either.left("durations: wider than the model's")
  }
  const ratios = narrower.aspect_ratios ?? model.aspect_ratios
  const wider = ratios.find((r) => !model.aspect_ratios.includes(r))
  if (wider !== undefined) return Either.left(`aspect_ratios: "${wider}" is not one of the model's`)
  const modes: Partial<Record<ReferenceMode, ModeCapability>> = { ...model.modes }
  const narrowed = Object.entries(narrower.modes ?? {}) as Array<[ReferenceMode, Partial<ModeCapability> | undefined]>
  for (const [mode, counts] of narrowed) {
    const base = model.modes[mode]
    if (base === undefined || counts === undefined) return Either.left(`modes: the model has no "${mode}" mode`)
    for (const kind of ["images", "videos", "audios"] as const) {
      const range = counts[kind]
      if (range !== undefined && !within(range, base[kind])) {
        return Either.left(`modes.${mode}.${kind}: wider than the model's`)
      }
    }
    if (counts.total !== undefined && counts.total > base.total) {
      return Either.left(`modes.${mode}.total: above the model's`)
    }
    modes[mode] = { ...base, ...counts }
  }
  return Either.right({
    ...model,
    durations,
    // The default stays the model's: a request is stored as the model read it, whichever channel takes it.
    aspect_ratios: ratios,
    modes
  })
}
