import type { ComponentChildren } from "preact"

/** Small shared pieces: messages, status badges, key-value lists, JSON blocks, page cursors. */

export const ErrorNote = ({ message }: { message: string | undefined }) =>
  message === undefined ? null : <p class="note note-error" role="alert">{message}</p>

export const Loading = () => <p class="muted" role="status">Loading…</p>

export const Status = ({ status }: { status: string }) => (
  <span class={`badge badge-${status}`}>{status.replace("_", " ")}</span>
)

export const Section = ({ title, children, id }: { title: string; children: ComponentChildren; id?: string }) => (
  <section class="card" aria-labelledby={id}>
    <h2 id={id}>{title}</h2>
    {children}
  </section>
)

export const Fields = ({ rows }: { rows: ReadonlyArray<readonly [string, ComponentChildren]> }) => (
  <dl class="fields">
    {rows.map(([name, value]) => (
      <div class="field-row" key={name}>
        <dt>{name}</dt>
        <dd>{value}</dd>
      </div>
    ))}
  </dl>
)

export const Json = ({ value, label }: { value: unknown; label: string }) => (
  <pre class="json" tabIndex={0} aria-label={label}>{JSON.stringify(value, null, 2)}</pre>
)

export const Progress = ({ value, label }: { value: number; label: string }) => (
  <span class="progress">
    <progress max={100} value={value} aria-label={label} />
    <span>{value}%</span>
  </span>
)

/**
 * Cursor paging as the list API does it: "Older" continues after the last
 * id of this page; "Newest" goes back to the start (cursors only go down).
 */
export const Pager = ({ hasMore, lastId, atStart, onOlder, onNewest }: {
  hasMore: boolean
  lastId: string | null
  atStart: boolean
  onOlder: (after: string) => void
  onNewest: () => void
}) => (
  <nav class="pager" aria-label="Pages">
    <button type="button" disabled={atStart} onClick={onNewest}>Newest</button>
    <button type="button" disabled={!hasMore || lastId === null} onClick={() => lastId && onOlder(lastId)}>
      Older
    </button>
  </nav>
)
