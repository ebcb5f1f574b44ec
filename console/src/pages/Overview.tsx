import { api, type Overview as OverviewData } from "../api.ts"
import { NamedBars, StackedBars } from "../components/Chart.tsx"
import { useLoad } from "../components/hooks.ts"
import { ErrorNote, Loading, Section } from "../components/ui.tsx"
import { dateTime, seconds } from "../format.ts"

const STATUS_SERIES = [
  { name: "succeeded", color: "#16a34a" },
  { name: "failed", color: "#dc2626" },
  { name: "in progress", color: "#2563eb" },
  { name: "queued", color: "#9ca3af" }
] as const

const hourLabel = (unix: number) => `${String(new Date(unix * 1000).getHours()).padStart(2, "0")}h`
const dayLabel = (unix: number) => {
  const d = new Date(unix * 1000)
  return `${d.getUTCDate()}/${d.getUTCMonth() + 1}`
}
const round = (n: number) => String(Math.round(n * 100) / 100)

const Charts = ({ data }: { data: OverviewData }) => (
  <>
    <Section title="Tasks per hour by status (last 24 h)" id="ov-tasks">
      <StackedBars
        title="Tasks per hour by status"
        points={data.tasks_per_hour.map((h) => h.hour)}
        series={STATUS_SERIES}
        label={hourLabel}
        values={(_, i) => {
          const h = data.tasks_per_hour[i]!
          return [h.succeeded, h.failed, h.in_progress, h.queued]
        }}
      />
    </Section>
    <Section title="Time to result per channel (last 24 h)" id="ov-times">
      {data.time_to_result.length === 0 ? <p class="muted">No task succeeded in the last 24 hours.</p> : (
        <NamedBars
          title="Time to result per channel, p50 and p95"
          rows={data.time_to_result.map((t) => ({ name: `${t.channel} (${t.tasks})`, values: [t.p50_ms, t.p95_ms] }))}
          series={[{ name: "p50", color: "#2563eb" }, { name: "p95", color: "#7c3aed" }]}
          format={(ms) => seconds(Math.round(ms))}
        />
      )}
    </Section>
    <Section title="Failures by code (last 24 h)" id="ov-failures">
      {data.failures_by_code.length === 0 ? <p class="muted">No task failed in the last 24 hours.</p> : (
        <NamedBars
          title="Failed tasks by error code"
          rows={data.failures_by_code.map((f) => ({ name: f.code, values: [f.count] }))}
          series={[{ name: "failed", color: "#dc2626" }]}
        />
      )}
    </Section>
    <Section title="Credits charged and refunded per day (last 14 days, UTC)" id="ov-credits">
      <StackedBars
        title="Credits charged and refunded per day"
        points={data.credits_per_day.map((d) => d.day)}
        series={[{ name: "charged", color: "#d97706" }, { name: "refunded", color: "#0891b2" }]}
        label={dayLabel}
        values={(_, i) => [data.credits_per_day[i]!.charged, data.credits_per_day[i]!.refunded]}
        format={round}
      />
    </Section>
    {data.deprecated_models.length === 0 ?
      null :
      (
        <Section title="Deprecated models still in use (last 30 days)" id="ov-deprecated">
          <table class="table">
            <thead>
              <tr>
                <th scope="col">Model</th>
                <th scope="col">Sunset</th>
                <th scope="col">Successor</th>
                <th scope="col">Accounts</th>
                <th scope="col">Tasks</th>
              </tr>
            </thead>
            <tbody>
              {data.deprecated_models.map((d) => (
                <tr key={d.model}>
                  <td data-label="Model">{d.model}</td>
                  <td data-label="Sunset">{dateTime(d.sunset)}</td>
                  <td data-label="Successor">{d.successor ?? "—"}</td>
                  <td data-label="Accounts">{d.accounts}</td>
                  <td data-label="Tasks">{d.tasks}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </Section>
      )}
  </>
)

/** The operator's overview: charts drawn from the database, refreshed every minute. */
export const Overview = () => {
  const overview = useLoad(() => api.overview(), [], { everyMs: 60_000 })
  return (
    <main id="main">
      <h1>Overview</h1>
      <ErrorNote message={overview.error} />
      {overview.data === undefined ? <Loading /> : <Charts data={overview.data} />}
    </main>
  )
}
