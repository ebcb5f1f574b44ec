import type { WebhookAttempt, WebhookEvent } from "../api.ts"
import { dateTime } from "../format.ts"
import { Status } from "./ui.tsx"

const attemptText = (a: WebhookAttempt) =>
  [
    `#${a.attempt} ${a.outcome}`,
    a.status_code === null ? null : `HTTP ${a.status_code}`,
    a.duration_ms === null ? null : `${a.duration_ms} ms`,
    dateTime(a.started_at),
    a.error
  ].filter(Boolean).join(" · ")

/** Webhook events with each attempt; `onResend` adds a "Send again" button to failed and skipped events. */
export const Deliveries = ({ events, onResend, busy }: {
  events: ReadonlyArray<WebhookEvent>
  onResend?: (id: string) => void
  busy?: string | undefined
}) =>
  events.length === 0 ? <p class="muted">No webhook events.</p> : (
    <ul class="events">
      {events.map((e) => (
        <li key={e.id} class="event" data-event-id={e.id}>
          <div class="event-head">
            <Status status={e.status} />
            <strong>{e.type}</strong>
            <span class="mono small">{e.id}</span>
            <span class="muted small">{dateTime(e.created_at)}</span>
            {onResend && (e.status === "failed" || e.status === "skipped") && (
              <button
                type="button"
                disabled={busy === e.id}
                onClick={() => onResend(e.id)}
              >
                Send again
              </button>
            )}
          </div>
          {e.next_attempt_at !== null && <p class="muted small">Next attempt {dateTime(e.next_attempt_at)}</p>}
          {e.attempts.length > 0 && (
            <ol class="attempts" aria-label={`Attempts of ${e.id}`}>
              {e.attempts.map((a) => <li key={a.attempt}>{attemptText(a)}</li>)}
            </ol>
          )}
        </li>
      ))}
    </ul>
  )
