/**
 * The sandbox's picture and sound as an ffmpeg filter graph, derived only
 * from a digest of the prompt: the same prompt always gives the same video,
 * different prompts differ in pattern, colours, motion and pitch. Only lavfi
 * sources are used (no drawtext: fonts are not guaranteed to exist), and the
 * slow generators (mandelbrot, geq) are avoided so a 30 s 1080p clip stays quick.
 */

export const FPS = 24
export const SAMPLE_RATE = 48_000

export interface SceneSpec {
  readonly width: number
  readonly height: number
  readonly frames: number
  /** Audio samples to produce; none means a silent video with no audio stream. */
  readonly samples: number | undefined
}

export interface Scene {
  readonly filterGraph: string
  readonly videoLabel: string
  readonly audioLabel: string | undefined
}

const LIFE_RULES = ["B3/S23", "B36/S23", "B3678/S34678", "B368/S245", "B34/S34", "B35678/S5678"]
const CELLAUTO_RULES = [18, 22, 30, 45, 57, 73, 90, 105, 110, 126, 150, 182]
const INTERVALS = [1.25, 4 / 3, 1.5, 2]

const hex = (r: number, g: number, b: number) => "0x" + [r, g, b].map((c) => c.toString(16).padStart(2, "0")).join("")

const fixed = (x: number) => x.toFixed(3)

/** Reads bytes of the digest as the scene's parameters; 32 bytes are enough for all of them. */
const reader = (digest: Uint8Array) => {
  let at = 0
  const byte = () => digest[at++ % digest.length]!
  return {
    byte,
    /** A number in [lo, hi]. */
    range: (lo: number, hi: number) => lo + (byte() / 255) * (hi - lo),
    pick: <A>(xs: ReadonlyArray<A>) => xs[byte() % xs.length]!,
    uint32: () => ((byte() << 24) | (byte() << 16) | (byte() << 8) | byte()) >>> 0,
    colour: () => hex(byte(), byte(), byte())
  }
}

export const sandboxScene = (digest: Uint8Array, spec: SceneSpec): Scene => {
  const r = reader(digest)
  const { width: W, height: H } = spec
  const short = Math.min(W, H)
  const even = (x: number) => 2 * Math.max(1, Math.round(x / 2))

  // Cellular patterns run on a coarse grid, blown up by a whole factor and cropped: cells stay
  // square blocks, so the encoder sees plain translations instead of resampled noise.
  const grid = (cellPx: number) => {
    const [gw, gh] = [Math.ceil(W / cellPx), Math.ceil(H / cellPx)]
    return { size: `${gw}x${gh}`, blowUp: `,scale=${gw * cellPx}:${gh * cellPx}:flags=neighbor,crop=${W}:${H}:0:0` }
  }
  // Colour work happens before the blow-up, on the small grid. 4:4:4 there, or the
  // 2×2 chroma subsampling would smear colour across neighbouring cells.
  const base: { readonly source: string; readonly blowUp: string } = (() => {
    switch (r.byte() % 3) {
      case 0:
        return { source: `testsrc2=s=${W}x${H}:r=${FPS}${r.byte() % 2 ? ",hflip" : ""}`, blowUp: "" }
      case 1: {
        const g = grid(Math.max(4, Math.round(short / 90)))
        const opts = [
          `s=${g.size}`,
          "r=12",
          `rule=${r.pick(LIFE_RULES)}`,
          `ratio=${fixed(r.range(0.3, 0.6))}`,
          `seed=${r.uint32()}`,
          `mold=${8 + (r.byte() % 24)}`,
          `life_color=${r.colour()}`,
          `death_color=${r.colour()}`,
          `mold_color=${r.colour()}`
        ]
        return { source: `life=${opts.join(":")},fps=${FPS},format=yuv444p`, blowUp: g.blowUp }
      }
      default: {
        const [on, off] = [[r.byte(), r.byte(), r.byte()], [r.byte(), r.byte(), r.byte()]] as const
        const channel = (i: 0 | 1 | 2) => `${off[i]}+val/255*${on[i] - off[i]}`
        const g = grid(Math.max(4, Math.round(short / 48)))
        const opts = [
          `s=${g.size}`,
          "r=12",
          `rule=${r.pick(CELLAUTO_RULES)}`,
          `random_fill_ratio=${fixed(r.range(0.2, 0.8))}`,
          `random_seed=${r.uint32()}`,
          "scroll=1"
        ]
        const colour = `format=rgb24,lutrgb=r='${channel(0)}':g='${channel(1)}':b='${channel(2)}',format=yuv444p`
        return { source: `cellauto=${opts.join(":")},fps=${FPS},${colour}`, blowUp: g.blowUp }
      }
    }
  })()

  // A fixed hue per prompt: a hue that drifts over time changes every pixel of every frame and
  // nearly doubles the encoder's work.
  const hue = `hue=h=${Math.round(r.range(0, 359))}:s=${fixed(r.range(1, 1.5))}`
  const box = even(short * r.range(0.12, 0.24))
  const path = (axis: "W" | "H") =>
    `(${axis}-${axis === "W" ? "w" : "h"})*(0.5+0.45*sin(t*${fixed(r.range(0.3, 1.8))}+${fixed(r.range(0, 6.283))}))`
  const video = [
    `${base.source},${hue}${base.blowUp}[bg]`,
    `color=c=${r.colour()}:s=${box}x${box}:r=${FPS}[box]`,
    `[bg][box]overlay=x='${path("W")}':y='${path("H")}',trim=end_frame=${spec.frames},setsar=1,format=yuv420p[v]`
  ]
  if (spec.samples === undefined) return { filterGraph: video.join(";"), videoLabel: "[v]", audioLabel: undefined }

  // A two-note chord with a slow tremolo; the root's pitch is the prompt's "voice".
  const root = Math.round(r.range(160, 720))
  const upper = root * r.pick(INTERVALS)
  const wobble = fixed(r.range(0.5, 4))
  const seconds = spec.samples / SAMPLE_RATE
  const fade = Math.min(0.05, seconds / 4)
  const left = `0.25*sin(2*PI*${root}*t)*(0.6+0.4*sin(2*PI*${wobble}*t))`
  const right = `0.25*sin(2*PI*${fixed(upper)}*t)*(0.6+0.4*cos(2*PI*${wobble}*t))`
  const audio = `aevalsrc=exprs='${left}|${right}':s=${SAMPLE_RATE}:c=stereo,atrim=end_sample=${spec.samples},` +
    `afade=t=in:d=${fade},afade=t=out:st=${fixed(seconds - fade)}:d=${fade}[a]`
  return { filterGraph: [...video, audio].join(";"), videoLabel: "[v]", audioLabel: "[a]" }
}
