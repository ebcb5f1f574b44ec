import { useEffect, useState } from "preact/hooks"
import { api } from "../api.ts"
import { Deliveries } from "../components/Deliveries.tsx"
import { useLoad } from "../components/hooks.ts"
import { ErrorNote, Loading, Pager, Section } from "../components/ui.tsx"
import { dateTime, toUnix } from "../format.ts"

/** The event types a webhook may subscribe to (a test event always goes). */
const EVENT_TYPES = [
  "video.task.succeeded",
  "video.task.failed",
  "image.task.succeeded",
  "image.task.failed",
  "account.balance_low"
] as const

/** Runs an action, showing its outcome in the page's status line. */
const useAction = () => {
  const [message, setMessage] = useState<string>()
  const [error, setError] = useState<string>()
  const [busy, setBusy] = useState<string>()
  const run = async (name: string, action: () => Promise<string>) => {
    setBusy(name)
    setError(undefined)
    try {
      setMessage(await action())
    } catch (e) {
      setMessage(undefined)
      setError((e as Error).message)
    } finally {
      setBusy(undefined)
    }
  }
  return { message, error, busy, run }
}

/**
 * The account's webhook: URL and enabled, the `wk-` key (hidden until asked,
 * regenerated in two steps: the old key stops at once), a `webhook.test`
 * event, and the delivery log with every attempt and "send again".
 */
export const Webhook = () => {
  const settings = useLoad(() => api.webhook(), [])
  const [after, setAfter] = useState<string>()
  const log = useLoad(
    () => api.webhookEvents({ limit: "20", after }),
    [after],
    { everyMs: 3000, keepPolling: (l) => l.data.some((e) => e.status === "pending") }
  )
  const [url, setUrl] = useState("")
  const [enabled, setEnabled] = useState(true)
  const [types, setTypes] = useState<ReadonlyArray<(typeof EVENT_TYPES)[number]>>(EVENT_TYPES)
  const [replayFrom, setReplayFrom] = useState("")
  const [replayTo, setReplayTo] = useState("")
  const [showKey, setShowKey] = useState(false)
  const [confirmRotate, setConfirmRotate] = useState(false)
  const action = useAction()

  useEffect(() => {
    if (settings.data) {
      setUrl(settings.data.url ?? "")
      setEnabled(settings.data.url === null ? true : settings.data.enabled)
      setTypes(EVENT_TYPES.filter((t) => settings.data!.events === null || settings.data!.events.includes(t)))
    }
  }, [settings.data])

  const save = (event: Event) => {
    event.preventDefault()
    void action.run("save", async () => {
      // Every type ticked is a subscription to all, new types included.
      await api.setWebhook({ url: url.trim(), enabled, events: types.length === EVENT_TYPES.length ? null : types })
      await settings.reload()
      return "Webhook settings saved."
    })
  }
  const rotate = () =>
    action.run("rotate", async () => {
      await api.rotateWebhookKey()
      setConfirmRotate(false)
      setShowKey(true)
      await settings.reload()
      return "New key made; the old key no longer signs anything."
    })
  const test = () =>
    action.run("test", async () => {
      const queued = await api.testWebhook()
      setAfter(undefined)
      await log.reload()
      return `Test event ${queued.event_id} queued.`
    })
  const replay = (event: Event) => {
    event.preventDefault()
    void action.run("replay", async () => {
      const from = Number(toUnix(replayFrom))
      const to = Number(toUnix(replayTo))
      const queued = await api.replayWebhook({ from, to })
      setAfter(undefined)
      await log.reload()
      return `${queued.events} events will be sent again, with their ids.`
    })
  }
  const resend = (id: string) =>
    action.run(id, async () => {
      await api.resendEvent(id)
      await log.reload()
      return `Event ${id} will be sent again.`
    })

  const key = settings.data?.key ?? null
  return (
    <main id="main">
      <h1>Webhook</h1>
      <p class="note" role="status">{action.message ?? ""}</p>
      <ErrorNote message={action.error ?? settings.error} />
      {settings.data === undefined ? <Loading /> : (
        <div class="grid">
          <Section title="Settings" id="sec-webhook">
            {settings.data.disabled_reason === null ? null : (
              <p class="note note-error" role="alert">
                Disabled {dateTime(settings.data.disabled_at)}: {settings.data.disabled_reason}
              </p>
            )}
            <form onSubmit={save} class="stack">
              <label for="webhook-url">Receiver URL</label>
              <input
                id="webhook-url"
                type="url"
                required
                placeholder="https://example.com/hooks"
                value={url}
                onInput={(e) => setUrl((e.target as HTMLInputElement).value)}
              />
              <label class="check">
                <input
                  type="checkbox"
                  checked={enabled}
                  onChange={(e) => setEnabled((e.target as HTMLInputElement).checked)}
                />
                Enabled (task events are sent)
              </label>
              <fieldset class="stack">
                <legend>Events it receives</legend>
                {EVENT_TYPES.map((type) => (
                  <label class="check" key={type}>
                    <input
                      type="checkbox"
                      checked={types.includes(type)}
                      onChange={(e) =>
                        setTypes(
                          (e.target as HTMLInputElement).checked
                            ? EVENT_TYPES.filter((t) => t === type || types.includes(t))
                            : types.filter((t) => t !== type)
                        )}
                    />
                    <code>{type}</code>
                  </label>
                ))}
              </fieldset>
              <button type="submit" class="primary" disabled={action.busy === "save"}>Save</button>
            </form>
          </Section>
          <Section title="Signing key" id="sec-key">
            {key === null ? <p class="muted">Save a URL to get a key.</p> : (
              <div class="stack">
                <p class="muted small">
                  Sent as <code>Authorization: Bearer wk-…</code> and used for the <code>webhook-signature</code>.
                </p>
                <output class="mono key" aria-label="Webhook key" data-testid="webhook-key">
                  {showKey ? key : `${key.slice(0, 3)}${"•".repeat(12)}${key.slice(-4)}`}
                </output>
                <div class="row">
                  <button type="button" onClick={() => setShowKey(!showKey)} aria-pressed={showKey}>
                    {showKey ? "Hide key" : "Show key"}
                  </button>
                  {!confirmRotate
                    ? <button type="button" onClick={() => setConfirmRotate(true)}>Regenerate key</button>
                    : (
                      <>
                        <button type="button" class="danger" onClick={rotate} disabled={action.busy === "rotate"}>
                          Confirm: regenerate
                        </button>
                        <button type="button" onClick={() => setConfirmRotate(false)}>Cancel</button>
                      </>
                    )}
                  <button type="button" onClick={test} disabled={action.busy === "test"}>Send test event</button>
                </div>
              </div>
            )}
          </Section>
        </div>
      )}
      <Section title="Replay" id="sec-replay">
        <form onSubmit={replay} class="form-grid">
          <label for="replay-from">Events created from</label>
          <input
            id="replay-from"
            type="datetime-local"
            required
            value={replayFrom}
            onInput={(e) => setReplayFrom((e.target as HTMLInputElement).value)}
          />
          <label for="replay-to">until</label>
          <input
            id="replay-to"
            type="datetime-local"
            required
            value={replayTo}
            onInput={(e) => setReplayTo((e.target as HTMLInputElement).value)}
          />
          <button type="submit" disabled={action.busy === "replay"}>Send them again</button>
        </form>
      </Section>
      <Section title="Delivery log" id="sec-log">
        <div class="row">
          <button type="button" onClick={() => void log.reload()}>Refresh</button>
        </div>
        <ErrorNote message={log.error} />
        {log.data === undefined
          ? <Loading />
          : <Deliveries events={log.data.data} onResend={resend} busy={action.busy} />}
        {log.data && (
          <Pager
            hasMore={log.data.has_more}
            lastId={log.data.last_id}
            atStart={after === undefined}
            onOlder={setAfter}
            onNewest={() => setAfter(undefined)}
          />
        )}
      </Section>
    </main>
  )
}
