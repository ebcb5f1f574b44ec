import { api, type Money as MoneyData } from "../api.ts"
import { NamedBars } from "../components/Chart.tsx"
import { useLoad } from "../components/hooks.ts"
import { ErrorNote, Loading, Section } from "../components/ui.tsx"
import { dateTime } from "../format.ts"

const round = (n: number) => String(Math.round(n * 100) / 100)

const REASONS = { billed_while_refunded: "billed, refunded", usage_mismatch: "usage differs" } as const

const Margins = ({ data }: { data: MoneyData }) => {
  const total = data.days.reduce((sum, d) => sum + d.margin, 0)
  return (
    <Section title="Margin per day (last 30 days, UTC)" id="money-days">
      {data.days.length === 0 ? <p class="muted">No task was charged in the last 30 days.</p> : (
        <>
          <NamedBars
            title="Credits net of refunds and upstream cost per day"
            rows={data.days.map((d) => ({ name: d.day ?? "", values: [d.credits_net, d.upstream_cost] }))}
            series={[{ name: "net credits", color: "#16a34a" }, { name: "upstream cost", color: "#dc2626" }]}
            format={round}
          />
          <table class="table">
            <caption>Per day: margin over the window {round(total)}</caption>
            <thead>
              <tr>
                <th scope="col">Day</th>
                <th scope="col">Tasks</th>
                <th scope="col">Charged</th>
                <th scope="col">Refunded</th>
                <th scope="col">Net</th>
                <th scope="col">Upstream cost</th>
                <th scope="col">Margin</th>
              </tr>
            </thead>
            <tbody>
              {data.days.map((d) => (
                <tr key={d.day}>
                  <td data-label="Day">{d.day}</td>
                  <td data-label="Tasks">{d.tasks}</td>
                  <td data-label="Charged">{round(d.credits_charged)}</td>
                  <td data-label="Refunded">{round(d.credits_refunded)}</td>
                  <td data-label="Net">{round(d.credits_net)}</td>
                  <td data-label="Upstream cost">{round(d.upstream_cost)}</td>
                  <td data-label="Margin" class={d.margin < 0 ? "negative" : undefined}>{round(d.margin)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
    </Section>
  )
}

const Losses = ({ data }: { data: MoneyData }) => (
  <Section title="Losses (last 30 days)" id="money-losses">
    {data.losses.length === 0 ? <p class="muted">No loss in the last 30 days.</p> : (
      <table class="table">
        <caption>
          Attempts the provider billed while the caller was refunded, or whose usage differs from the charge
          {data.more_losses ? " (the latest 50; the admin API lists them all)" : ""}
        </caption>
        <thead>
          <tr>
            <th scope="col">Started</th>
            <th scope="col">Task</th>
            <th scope="col">Model</th>
            <th scope="col">Channel</th>
            <th scope="col">Why</th>
            <th scope="col">Upstream cost</th>
            <th scope="col">Refunded</th>
            <th scope="col">Usage (reported / charged)</th>
          </tr>
        </thead>
        <tbody>
          {data.losses.map((l) => (
            <tr key={`${l.task_id}-${l.attempt}`}>
              <td data-label="Started">{dateTime(l.started_at)}</td>
              <td data-label="Task" class="mono">{l.task_id}</td>
              <td data-label="Model">{l.model}</td>
              <td data-label="Channel">{l.channel}</td>
              <td data-label="Why">{l.reasons.map((r) => REASONS[r]).join(", ")}</td>
              <td data-label="Upstream cost">{l.upstream_cost === null ? "—" : round(l.upstream_cost)}</td>
              <td data-label="Refunded">{round(l.credits_refunded)}</td>
              <td data-label="Usage">
                {l.usage.reported === null
                  ? "—"
                  : `${l.usage.reported} / ${l.usage.charged ?? "—"} ${l.usage.unit ?? ""}`}
              </td>
            </tr>
          ))}
        </tbody>
      </table>
    )}
  </Section>
)

/** The operator's money: what each day earned against what it cost upstream, and where money was lost. */
export const Money = () => {
  const money = useLoad(() => api.money(), [], { everyMs: 60_000 })
  return (
    <main id="main">
      <h1>Money</h1>
      <ErrorNote message={money.error} />
      {money.data === undefined ? <Loading /> : (
        <>
          <Margins data={money.data} />
          <Losses data={money.data} />
        </>
      )}
    </main>
  )
}
