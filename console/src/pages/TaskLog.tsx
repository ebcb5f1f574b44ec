import { useState } from "preact/hooks"
import { api, type TaskLogQuery } from "../api.ts"
import { useLoad } from "../components/hooks.ts"
import { ErrorNote, Loading, Pager, Progress, Status } from "../components/ui.tsx"
import { dateTime, toUnix } from "../format.ts"
import { href, navigate, type Route } from "../router.ts"

/** The filters live in the URL fragment, so a filtered view can be bookmarked and survives a reload. */
const FILTERS = ["kind", "status", "operation", "model", "client_reference_id", "from", "to"] as const

type Values = Record<(typeof FILTERS)[number], string>

type Choices<K extends keyof TaskLogQuery> = ReadonlyArray<NonNullable<TaskLogQuery[K]>>
const KINDS: Choices<"kind"> = ["video", "image"]
const STATUSES: Choices<"status"> = ["queued", "in_progress", "succeeded", "failed"]
const OPERATIONS: Choices<"operation"> = ["generation", "edit"]

/** A filter from the URL fragment, if it is one the log offers (a hand-edited link may hold anything). */
const oneOf = <A extends string>(value: string | null, choices: ReadonlyArray<A>): A | undefined =>
  choices.find((choice) => choice === value)

type Setter = (name: keyof Values, value: string) => void

const Select = ({ id, label, values, set, options }: {
  id: keyof Values
  label: string
  values: Values
  set: Setter
  options: ReadonlyArray<string>
}) => (
  <div class="filter">
    <label for={`filter-${id}`}>{label}</label>
    <select id={`filter-${id}`} value={values[id]} onChange={(e) => set(id, (e.target as HTMLSelectElement).value)}>
      <option value="">any</option>
      {options.map((o) => <option key={o} value={o}>{o.replace("_", " ")}</option>)}
    </select>
  </div>
)

const Text = ({ id, label, values, set, type = "text" }: {
  id: keyof Values
  label: string
  values: Values
  set: Setter
  type?: "text" | "datetime-local"
}) => (
  <div class="filter">
    <label for={`filter-${id}`}>{label}</label>
    <input
      id={`filter-${id}`}
      // Preact's input types split text-like and date-like inputs; both take a string value here.
      type={type as "text"}
      value={values[id]}
      spellcheck={false}
      onInput={(e) => set(id, (e.target as HTMLInputElement).value)}
    />
  </div>
)

/** The filter form keeps what is typed in its own state, so the log's polling never resets a half-typed value. */
const Filters = ({ params, onApply }: { params: URLSearchParams; onApply: (values: Values) => void }) => {
  const [values, setValues] = useState<Values>(
    () => Object.fromEntries(FILTERS.map((f) => [f, params.get(f) ?? ""])) as Values
  )
  const set: Setter = (name, value) => setValues((v) => ({ ...v, [name]: value }))
  const common = { values, set }
  return (
    <form
      class="card filters"
      aria-label="Filters"
      onSubmit={(e) => {
        e.preventDefault()
        onApply(values)
      }}
    >
      <Select id="kind" label="Kind" options={KINDS} {...common} />
      <Select id="status" label="Status" options={STATUSES} {...common} />
      <Select id="operation" label="Operation" options={OPERATIONS} {...common} />
      <Text id="model" label="Model" {...common} />
      <Text id="client_reference_id" label="Client reference id" {...common} />
      <Text id="from" label="Created from" type="datetime-local" {...common} />
      <Text id="to" label="Created until" type="datetime-local" {...common} />
      <div class="filter-actions">
        <button type="submit" class="primary">Apply filters</button>
        <a class="button" href={href("tasks")}>Clear</a>
      </div>
    </form>
  )
}

/**
 * The task log: video and image tasks, newest first, with the list API's
 * filters and cursor paging. It polls at the interval the API names in
 * Retry-After, so new tasks appear and status and progress move without a reload.
 */
export const TaskLog = ({ route, pollSeconds }: { route: Route; pollSeconds: number }) => {
  const p = route.params
  const [after, setAfter] = useState<string>()
  const filterKey = FILTERS.map((f) => p.get(f) ?? "").join("|")
  const tasks = useLoad(
    () =>
      api.tasks({
        kind: oneOf(p.get("kind"), KINDS),
        status: oneOf(p.get("status"), STATUSES),
        operation: oneOf(p.get("operation"), OPERATIONS),
        model: p.get("model") ?? undefined,
        client_reference_id: p.get("client_reference_id") ?? undefined,
        created_after: toUnix(p.get("from") ?? ""),
        created_before: toUnix(p.get("to") ?? ""),
        after,
        limit: "20"
      }),
    [filterKey, after],
    { everyMs: pollSeconds * 1000 }
  )

  const apply = (values: Values) => {
    setAfter(undefined)
    navigate("tasks", Object.fromEntries(FILTERS.map((f) => [f, values[f].trim() || undefined])))
  }

  return (
    <main id="main">
      <h1>Task log</h1>
      <Filters params={p} onApply={apply} key={filterKey} />
      <ErrorNote message={tasks.error} />
      {tasks.data === undefined ? <Loading /> : (
        <section class="card" aria-label="Tasks">
          <p class="muted live" aria-live="polite">
            {tasks.data.data.length === 0
              ? "No tasks match."
              : `Updated every ${pollSeconds} s while this page is open.`}
          </p>
          {tasks.data.data.length > 0 && (
            <table class="table">
              <thead>
                <tr>
                  <th scope="col">Task</th>
                  <th scope="col">Model</th>
                  <th scope="col">Status</th>
                  <th scope="col">Progress</th>
                  <th scope="col">Created</th>
                </tr>
              </thead>
              <tbody>
                {tasks.data.data.map((t) => (
                  <tr key={t.id} data-task-id={t.id}>
                    <td data-label="Task">
                      <a href={href(`tasks/${t.id}`)} class="mono">{t.id}</a>
                      <div class="muted small">
                        {t.object === "video.task" ? "video" : "image"} · {t.operation}
                        {t.client_reference_id ? ` · ${t.client_reference_id}` : ""}
                      </div>
                    </td>
                    <td data-label="Model" class="wrap">{t.model}</td>
                    <td data-label="Status">
                      <Status status={t.status} />
                    </td>
                    <td data-label="Progress">
                      <Progress value={t.progress} label={`Progress of ${t.id}`} />
                    </td>
                    <td data-label="Created">{dateTime(t.created_at)}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
          <Pager
            hasMore={tasks.data.has_more}
            lastId={tasks.data.last_id}
            atStart={after === undefined}
            onOlder={setAfter}
            onNewest={() => setAfter(undefined)}
          />
        </section>
      )}
    </main>
  )
}
