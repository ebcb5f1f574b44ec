/**
 * Plain SVG charts for the overview: stacked bars over time, and horizontal
 * bars per name. The SVG scales with its box (viewBox, width 100%), so it
 * fits a 360 px screen; every chart has a text label for screen readers, and each bar its value in a <title>.
 */

export interface Series {
  readonly name: string
  readonly color: string
}

const W = 320
const H = 160
const PAD = { left: 28, right: 4, top: 8, bottom: 18 }

const niceMax = (max: number) => {
  if (max <= 0) return 1
  const power = 10 ** Math.floor(Math.log10(max))
  const step = [1, 2, 5, 10].find((m) => m * power >= max)! * power
  return step
}

const Legend = ({ series }: { series: ReadonlyArray<Series> }) => (
  <ul class="legend">
    {series.map((s) => (
      <li key={s.name}>
        <span class="swatch" style={{ background: s.color }} aria-hidden="true" />
        {s.name}
      </li>
    ))}
  </ul>
)

/** Stacked bars, one per point (hour or day); `label` names a point under its bar. */
export const StackedBars = ({ title, points, series, label, values, format = String }: {
  title: string
  points: ReadonlyArray<number>
  series: ReadonlyArray<Series>
  label: (point: number) => string
  values: (point: number, index: number) => ReadonlyArray<number>
  format?: (n: number) => string
}) => {
  const stacks = points.map((p, i) => values(p, i))
  const total = stacks.reduce((sum, stack) => sum + stack.reduce((a, b) => a + b, 0), 0)
  const max = niceMax(Math.max(0, ...stacks.map((stack) => stack.reduce((a, b) => a + b, 0))))
  const plotW = W - PAD.left - PAD.right
  const plotH = H - PAD.top - PAD.bottom
  const slot = plotW / Math.max(1, points.length)
  const y = (v: number) => PAD.top + plotH - (v / max) * plotH
  const every = Math.ceil(points.length / 6)
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${H}`} role="img" aria-label={`${title}: total ${format(total)}`}>
        <line x1={PAD.left} x2={W - PAD.right} y1={y(0)} y2={y(0)} class="axis" />
        <text x={PAD.left - 3} y={y(max) + 4} class="tick" text-anchor="end">{format(max)}</text>
        <text x={PAD.left - 3} y={y(0)} class="tick" text-anchor="end">0</text>
        {stacks.map((stack, i) => {
          let base = 0
          return (
            <g key={points[i]}>
              {stack.map((v, s) => {
                if (v <= 0) return null
                const top = y(base + v)
                const height = y(base) - top
                base += v
                return (
                  <rect
                    key={s}
                    class="bar"
                    x={PAD.left + i * slot + slot * 0.1}
                    y={top}
                    width={slot * 0.8}
                    height={height}
                    fill={series[s]!.color}
                  >
                    <title>{`${label(points[i]!)} · ${series[s]!.name}: ${format(v)}`}</title>
                  </rect>
                )
              })}
              {i % every === 0 && (
                <text x={PAD.left + i * slot + slot / 2} y={H - 4} class="tick" text-anchor="middle">
                  {label(points[i]!)}
                </text>
              )}
            </g>
          )
        })}
      </svg>
      <Legend series={series} />
    </figure>
  )
}

/** Horizontal bars, one row per name, with one or more series side by side. */
export const NamedBars = ({ title, rows, series, format = String }: {
  title: string
  rows: ReadonlyArray<{ readonly name: string; readonly values: ReadonlyArray<number | null> }>
  series: ReadonlyArray<Series>
  format?: (n: number) => string
}) => {
  const max = Math.max(0, ...rows.flatMap((r) => r.values.map((v) => v ?? 0)))
  const barH = 12
  const rowH = barH * series.length + 14
  const height = Math.max(1, rows.length) * rowH + 4
  const plotW = W - 60
  return (
    <figure class="chart">
      <svg viewBox={`0 0 ${W} ${height}`} role="img" aria-label={title}>
        {rows.map((row, r) => (
          <g key={row.name}>
            <text x={0} y={r * rowH + 10} class="tick">{row.name}</text>
            {row.values.map((v, s) => {
              const width = max === 0 || v === null ? 0 : Math.max(1, (v / max) * plotW)
              const yTop = r * rowH + 13 + s * barH
              return (
                <g key={s}>
                  <rect class="bar" x={0} y={yTop} width={width} height={barH - 2} fill={series[s]!.color}>
                    <title>{`${row.name} · ${series[s]!.name}: ${v === null ? "—" : format(v)}`}</title>
                  </rect>
                  <text x={width + 3} y={yTop + barH - 3} class="tick">{v === null ? "—" : format(v)}</text>
                </g>
              )
            })}
          </g>
        ))}
      </svg>
      {series.length > 1 && <Legend series={series} />}
    </figure>
  )
}
