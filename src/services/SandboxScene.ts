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

const hex = (r: number, g: number, b: number) =>
  "0x" + [r, g, b].map((c) => c.toString(16).padStart(2, "0")).join("")

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

  // Cellular patterns are computed on a coarse grid and scaled up with hard edges: cheap and legible.
  const grid = (cellPx: number) => `${Math.ceil(W / cellPx)}x${Math.ceil(H / cellPx)}`
  const base = (() => {
    switch (r.byte() % 3) {
      case 0:
        return `testsrc2=s=${W}x${H}:r=${FPS}${r.byte() % 2 ? ",hflip" : ""}`
      case 1: {
        const opts = [
          `s=${grid(Math.max(4, Math.round(short / 90)))}`,
          "r=12",
          `rule=${r.pick(LIFE_RULES)}`,
          `ratio=${fixed(r.range(0.15, 0.5))}`,
          `seed=${r.uint32()}`,
          `mold=${8 + (r.byte() % 24)}`,
          `life_color=${r.colour()}`,
          `death_color=${r.colour()}`,
          `mold_color=${r.colour()}`
        ]
        return `life=${opts.join(":")},fps=${FPS},scale=${W}:${H}:flags=neighbor`
      }
      default: {
        const [on, off] = [[r.byte(), r.byte(), r.byte()], [r.byte(), r.byte(), r.byte()]] as const
        const channel = (i: 0 | 1 | 2) => `${off[i]}+val/255*${on[i] - off[i]}`
        const opts = [
          `s=${grid(Math.max(4, Math.round(short / 48)))}`,
          `r=${FPS}`,
          `rule=${r.pick(CELLAUTO_RULES)}`,
          `random_fill_ratio=${fixed(r.range(0.2, 0.8))}`,
          `random_seed=${r.uint32()}`,
          "scroll=1"
        ]
        return `cellauto=${opts.join(":")},format=rgb24,lutrgb=r='${channel(0)}':g='${channel(1)}':b='${channel(2)}',scale=${W}:${H}:flags=neighbor`
      }
    }
  })()

  const hue = `hue=h=${Math.round(r.range(0, 359))}+${fixed(r.range(-30, 30))}*t:s=${fixed(r.range(1, 1.5))}`
  const box = even(short * r.range(0.12, 0.24))
  const path = (axis: "W" | "H") =>
    `(${axis}-${axis === "W" ? "w" : "h"})*(0.5+0.45*sin(t*${fixed(r.range(0.3, 1.8))}+${fixed(r.range(0, 6.283))}))`
  const video = [
    `${base},${hue}[bg]`,
    `color=c=${r.colour()}:s=${box}x${box}:r=${FPS}[box]`,
    `[bg][box]overlay=x='${path("W")}':y='${path("H")}',trim=end_frame=${spec.frames},setsar=1,format=yuv420p[v]`
  ]
  if (spec.samples === undefined) return { filterGraph: video.join(";"), videoLabel: "[v]", audioLabel: undefined }

  // A two-note chord with a slow tremolo; the root's pitch is the prompt's "voice".
  const root = Math.round(r.range(160, 720))
  const fifth = root * r.pick(INTERVALS)
  const wobble = fixed(r.range(0.5, 4))
  const seconds = spec.samples / SAMPLE_RATE
  const fade = Math.min(0.05, seconds / 4)
  const left = `0.25*sin(2*PI*${root}*t)*(0.6+0.4*sin(2*PI*${wobble}*t))`
  const right = `0.25*sin(2*PI*${fixed(fifth)}*t)*(0.6+0.4*cos(2*PI*${wobble}*t))`
  const audio =
    `aevalsrc=exprs='${left}|${right}':s=${SAMPLE_RATE}:c=stereo,atrim=end_sample=${spec.samples},` +
    `afade=t=in:d=${fade},afade=t=out:st=${fixed(seconds - fade)}:d=${fade}[a]`
  return { filterGraph: [...video, audio].join(";"), videoLabel: "[v]", audioLabel: "[a]" }
}
