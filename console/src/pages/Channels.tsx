import { useState } from "preact/hooks"
import { api, type Channel, type ChannelAction, type ChannelCheck } from "../api.ts"
import { useLoad } from "../components/hooks.ts"
import { ErrorNote, Fields, Loading, Section, Status } from "../components/ui.tsx"
import { dateTime, seconds } from "../format.ts"

const ACTIONS: ReadonlyArray<readonly [ChannelAction, string, Channel["state"]]> = [
  ["enable", "Enable", "enabled"],
  ["drain", "Drain", "draining"],
  ["disable", "Disable", "disabled"]
]

const breakerText = (b: Channel["breakers"][number]) =>
  `${b.replica}: ${b.open ? `open until ${new Date(b.open_until ?? 0).toLocaleTimeString()}` : "closed"}`

/** One channel: its view, the state buttons (with an optional reason) and the check. */
const ChannelCard = ({ channel, onChanged }: { channel: Channel; onChanged: () => Promise<void> }) => {
  const [reason, setReason] = useState("")
  const [error, setError] = useState<string>()
  const [busy, setBusy] = useState(false)
  const [check, setCheck] = useState<ChannelCheck>()
  const id = `ch-${channel.name}`
  const change = async (action: ChannelAction) => {
    setBusy(true)
    try {
      await api.setChannelState(channel.name, action, reason.trim() === "" ? {} : { reason: reason.trim() })
      await onChanged()
      setReason("")
      setError(undefined)
    } catch (e) {
      setError((e as Error).message)
    } finally {
      setBusy(false)
    }
  }
  const runCheck = async () => {
    setBusy(true)
    setCheck(undefined)
    try {
      setCheck(await api.checkChannel(channel.name))
      setError(undefined)
    } catch (e) {
      setError((e as Error).message)
    } finally {
      setBusy(false)
    }
  }
  const recent = channel.last_15_minutes
  const upstream = channel.last_upstream_error
  return (
    <Section title={channel.name} id={id}>
      <p>
        <Status status={channel.state} /> <span class="muted small">{channel.adapter}</span>
        {channel.reason && <span class="small">· {channel.reason}</span>}
      </p>
      <Fields
        rows={[
          ["State since", dateTime(channel.state_changed_at === null ? null : channel.state_changed_at / 1000)],
          ["Kinds", channel.kinds.join(", ")],
          ["Base URL", <span class="mono small">{channel.base_url ?? "—"}</span>],
          ["In flight", `${channel.in_flight} of ${channel.concurrency}`],
          ["Waiting", String(channel.waiting)],
          [
            "Breakers",
            channel.breakers.length === 0 ? "no reports" : channel.breakers.map(breakerText).join("; ")
          ],
          [
            "Last 15 minutes",
            `${recent.submitted} submitted, ${recent.succeeded} succeeded, ${recent.failed} failed, ${recent.failed_over} failed over`
          ],
          ["Time to result", `p50 ${seconds(recent.p50_ms)} · p95 ${seconds(recent.p95_ms)}`],
          [
            "Last upstream error",
            upstream === null ? "none" : (
              <span>
                {dateTime(upstream.at)} · status {upstream.status ?? "—"} · {upstream.code ?? "—"}
                {upstream.message && <div class="small">{upstream.message}</div>}
              </span>
            )
          ]
        ]}
      />
      <div class="form-grid">
        <div class="filter">
          <label for={`${id}-reason`}>Reason (optional)</label>
          <input
            id={`${id}-reason`}
            maxLength={500}
            value={reason}
            onInput={(e) => setReason((e.target as HTMLInputElement).value)}
          />
        </div>
        <div class="filter-actions">
          {ACTIONS.map(([action, label, state]) => (
            <button
              key={action}
              type="button"
              disabled={busy || channel.state === state}
              onClick={() => void change(action)}
              aria-label={`${label} ${channel.name}`}
            >
              {label}
            </button>
          ))}
          <button type="button" disabled={busy} onClick={() => void runCheck()} aria-label={`Check ${channel.name}`}>
            Check
          </button>
        </div>
      </div>
      <ErrorNote message={error} />
      {check && (
        <p class={check.ok ? "note" : "note note-error"} role="status" data-check={check.result}>
          Check: {check.result.replace("_", " ")} ({check.latency_ms} ms) · {check.detail}
        </p>
      )}
    </Section>
  )
}

/** The operator's channels: state, load, breakers and recent results, refreshed every 10 seconds. */
export const Channels = () => {
  const list = useLoad(() => api.channels(), [], { everyMs: 10_000 })
  const shown = list.data?.data
  return (
    <main id="main">
      <h1>Channels</h1>
      <ErrorNote message={list.error} />
      {shown === undefined ? <Loading /> : shown.length === 0 ? <p class="muted">No channels are configured.</p> : (
        shown.map((c) => <ChannelCard key={c.name} channel={c} onChanged={list.reload} />)
      )}
    </main>
  )
}
