import { useState } from "preact/hooks"
import { api, type Asset, assetUrl, taskEventsUrl, type TaskObject } from "../api.ts"
import { Deliveries } from "../components/Deliveries.tsx"
import { useLoad, useTaskEvents } from "../components/hooks.ts"
import { ErrorNote, Fields, Json, Loading, Progress, Section, Status } from "../components/ui.tsx"
import { bytes, credits, dateTime, shape } from "../format.ts"
import { href } from "../router.ts"

const terminal = (status: string) => status === "succeeded" || status === "failed"

/** Every field of the task object, in the API's order; objects shown as JSON. */
const taskFields = (task: TaskObject) =>
  Object.entries(task)
    .filter(([name]) => name !== "result" && name !== "error")
    .map(([name, value]) =>
      [
        name,
        name.endsWith("_at") && typeof value === "number"
          ? `${dateTime(value)} (${value})`
          : name === "status" ?
          <Status status={String(value)} />
          : name === "progress" ?
          <Progress value={Number(value)} label="Task progress" />
          : value !== null && typeof value === "object" ?
          <Json value={value} label={name} />
          : value === null
          ? "—"
          : String(value)
      ] as const
    )

/**
 * Cancel in two steps, without a browser dialog, on a task not yet ended.
 * Whether it can really be cancelled is the server's call (a provider that
 * has started it may refuse): its reason is shown, and the task goes on.
 */
const CancelButton = ({ task, onDone }: { task: TaskObject; onDone: () => void }) => {
  const [asking, setAsking] = useState(false)
  const [busy, setBusy] = useState(false)
  const [error, setError] = useState<string>()
  if (terminal(task.status)) return null
  if (!asking) {
    return (
      <p>
        <button type="button" class="danger" onClick={() => setAsking(true)}>Cancel task</button>
      </p>
    )
  }
  return (
    <p class="confirm">
      <button
        type="button"
        class="danger"
        disabled={busy}
        onClick={async () => {
          setBusy(true)
          try {
            await api.cancelTask(task.id)
            setError(undefined)
            setAsking(false)
            onDone()
          } catch (e) {
            setError((e as Error).message)
          } finally {
            setBusy(false)
          }
        }}
      >
        Confirm cancel (refunds what no provider has started)
      </button>
      <button type="button" onClick={() => setAsking(false)}>Keep it</button>
      <ErrorNote message={error} />
    </p>
  )
}

/** A result file played or shown from the console's own origin. */
const Result = ({ asset }: { asset: Asset }) => (
  <figure class="result">
    {asset.kind === "video"
      ? <video controls preload="metadata" src={assetUrl(asset.id)} aria-label={`Result video ${asset.filename}`} />
      : (
        <img
          src={assetUrl(asset.id)}
          alt={`Result image ${asset.filename}`}
          width={asset.width}
          height={asset.height}
        />
      )}
    <figcaption class="small">
      {asset.filename} · {asset.mime_type} · {bytes(asset.size_bytes)} · {shape(asset)} ·{" "}
      <a href={assetUrl(asset.id, true)} download={asset.filename}>Download</a>
    </figcaption>
  </figure>
)

/**
 * One task: its fields, the request as stored, the result, the error, its
 * ledger lines and the webhook deliveries of its events. Until the task is
 * finished the page follows its live status stream and reloads on each
 * change; after that it polls only while webhook deliveries are pending.
 * The operator also sees where it ran.
 */
export const TaskDetail = ({ id, pollSeconds }: { id: string; pollSeconds: number }) => {
  const page = useLoad(() => api.task(id), [id], {
    everyMs: pollSeconds * 1000,
    keepPolling: (p) => terminal(p.task.status) && p.webhook_events.some((e) => e.status === "pending")
  })
  useTaskEvents(
    taskEventsUrl(id),
    page.data !== undefined && !terminal(page.data.task.status),
    () => void page.reload()
  )
  if (page.data === undefined) {
    return (
      <main id="main">
        <h1>Task</h1>
        <ErrorNote message={page.error} />
        {page.error === undefined && <Loading />}
      </main>
    )
  }
  const { task, request, ledger, assets, webhook_events, operator } = page.data
  return (
    <main id="main">
      <p>
        <a href={href("tasks")}>← Task log</a>
      </p>
      <h1 class="wrap">
        Task <span class="mono">{task.id}</span>
      </h1>
      <ErrorNote message={page.error} />
      <div class="grid">
        <Section title="Task" id="sec-task">
          <Fields rows={taskFields(task)} />
          <CancelButton task={task} onDone={() => void page.reload()} />
        </Section>
        <Section title="Result" id="sec-result">
          {assets.length > 0
            ? assets.map((a) => <Result key={a.id} asset={a} />)
            : (
              <p class="muted">
                {terminal(task.status) ? "No result files (failed, or deleted)." : "Not finished yet."}
              </p>
            )}
          {task.error && (
            <Fields
              rows={[["Error code", <code>{task.error.code}</code>], ["Message", task.error.message], [
                "Retryable",
                String(task.error.retryable)
              ]]}
            />
          )}
        </Section>
        <Section title="Ledger" id="sec-ledger">
          {ledger.length === 0 ? <p class="muted">No ledger lines.</p> : (
            <table class="table">
              <thead>
                <tr>
                  <th scope="col">Kind</th>
                  <th scope="col">Wallet</th>
                  <th scope="col">Subscription</th>
                  <th scope="col">When</th>
                </tr>
              </thead>
              <tbody>
                {ledger.map((l) => (
                  <tr key={l.id}>
                    <td data-label="Kind">{l.kind === "charge" ? "pre-charge" : l.kind}</td>
                    <td data-label="Wallet">{credits(l.wallet_credits)}</td>
                    <td data-label="Subscription">{credits(l.subscription_credits)}</td>
                    <td data-label="When">{dateTime(l.created_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </Section>
        <Section title="Webhook deliveries" id="sec-webhooks">
          <Deliveries events={webhook_events} />
        </Section>
        {operator && (
          <Section title="Operator: where it ran" id="sec-operator">
            <Fields
              rows={Object.entries(operator).map(([k, v]) =>
                [k, v !== null && typeof v === "object" ? <Json value={v} label={k} /> : String(v ?? "—")] as const
              )}
            />
          </Section>
        )}
        <Section title="Request as stored" id="sec-request">
          <Json value={request} label="Request" />
        </Section>
      </div>
    </main>
  )
}
