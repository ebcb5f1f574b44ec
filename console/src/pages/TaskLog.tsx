import { useState } from "preact/hooks"
import { api, taskEventsUrl, type TaskLogQuery } from "../api.ts"
import { type TaskEvent, useLoad, useTaskEvents } from "../components/hooks.ts"
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

const terminal = (status: string) => status === "succeeded" || status === "failed"

/**
 * Running tasks of the page followed through their live status streams.
 * Few: a session's streams are bounded on the server (`streams_per_key`,
 * 20 by default), and a browser keeps about six connections to a host over
 * HTTP/1.1, which the page's own requests need too.
 */
const FOLLOWED = 4

/** While streams carry the running tasks' changes, the list is re-read this much less often (new tasks, the rest). */
const SLOWER = 12

/** One followed task's stream; renders nothing (a hook per task, which a loop cannot call). */
const Follow = ({ id, onTask }: { id: string; onTask: (task: TaskEvent) => void }) => {
  useTaskEvents(taskEventsUrl(id), true, onTask)
  return null
}

/**
 * The task log: video and image tasks, newest first, with the list API's
 * filters and cursor paging. The first FOLLOWED running tasks shown move
 * live: their rows take status and progress from the tasks' event streams,
 * and the list itself is re-read only SLOWER times less often than the
 * interval the API names in Retry-After. With no running task followed, the
 * log polls at that interval, so new tasks appear without a reload.
 */
export const TaskLog = ({ route, pollSeconds }: { route: Route; pollSeconds: number }) => {
  const p = route.params
  const [after, setAfter] = useState<string>()
  const filterKey = FILTERS.map((f) => p.get(f) ?? "").join("|")
  // The latest state each followed stream sent, by task id; a row shows it over the list's older one.
  const [live, setLive] = useState<Record<string, TaskEvent>>({})
  const [followed, setFollowed] = useState<ReadonlyArray<string>>([])
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
    { everyMs: pollSeconds * 1000 * (followed.length > 0 ? SLOWER : 1) }
  )
  const shown = (tasks.data?.data ?? []).map((t) => {
    const seen = live[t.id]
    return seen === undefined || terminal(t.status) ? t : { ...t, status: seen.status, progress: seen.progress }
  })
  const running = shown.filter((t) => !terminal(t.status)).slice(0, FOLLOWED).map((t) => t.id)
  // Kept as state, so the list's polling interval changes only when the set of followed tasks does.
  if (running.join(" ") !== followed.join(" ")) setFollowed(running)
  const onTask = (task: TaskEvent) => setLive((now) => ({ ...now, [task.id]: task }))

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
          {followed.map((id) => <Follow key={id} id={id} onTask={onTask} />)}
          <p class="muted live" aria-live="polite">
            {shown.length === 0
              ? "No tasks match."
              : followed.length > 0
              ? `Running tasks update live; the list is re-read every ${pollSeconds * SLOWER} s.`
              : `Updated every ${pollSeconds} s while this page is open.`}
          </p>
          {shown.length > 0 && (
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
                {shown.map((t) => (
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
