import { useCallback, useEffect, useRef, useState } from "preact/hooks"

export interface Loaded<T> {
  readonly data: T | undefined
  readonly error: string | undefined
  readonly reload: () => Promise<void>
}

/**
 * Loads once per change of `deps`, then again every `everyMs` while the tab
 * is visible and `keepPolling(data)` holds (live status without a reload).
 * A slow answer for old `deps` never overwrites a newer one.
 */
export const useLoad = <T>(
  load: () => Promise<T>,
  deps: ReadonlyArray<unknown>,
  options: { readonly everyMs?: number; readonly keepPolling?: (data: T) => boolean } = {}
): Loaded<T> => {
  const [data, setData] = useState<T>()
  const [error, setError] = useState<string>()
  const generation = useRef(0)
  const latest = useRef(load)
  latest.current = load

  const run = useCallback(async () => {
    const mine = generation.current
    try {
      const value = await latest.current()
      if (mine !== generation.current) return
      setData(value)
      setError(undefined)
    } catch (e) {
      if (mine === generation.current) setError((e as Error).message)
    }
  }, [])

  useEffect(() => {
    generation.current++
    setData(undefined)
    void run()
  }, deps)

  // A hidden tab skips the fetch but keeps the timer going, so it catches up when shown.
  const [tick, setTick] = useState(0)
  const { everyMs, keepPolling } = options
  useEffect(() => {
    if (everyMs === undefined || data === undefined || (keepPolling && !keepPolling(data))) return
    const timer = window.setTimeout(() => {
      if (document.visibilityState === "visible") void run().then(() => setTick((t) => t + 1))
      else setTick((t) => t + 1)
    }, everyMs)
    return () => window.clearTimeout(timer)
  }, [data, tick, everyMs])

  return { data, error, reload: run }
}

/** What a `task` event carries that a page reads (the whole task object is there). */
export interface TaskEvent {
  readonly id: string
  readonly status: string
  readonly progress: number
}

/**
 * Follows a task's live status stream while `live` holds: `onChange` runs on
 * each `task` event with the task it carries (the task page reloads what it
 * shows, ledger and files included; the log updates its row). The stream is closed on the terminal state, so the browser does
 * not reconnect to a finished task; a dropped connection is reconnected by
 * the browser with `Last-Event-ID`.
 */
export const useTaskEvents = (url: string, live: boolean, onChange: (task: TaskEvent) => void) => {
  const latest = useRef(onChange)
  latest.current = onChange
  useEffect(() => {
    if (!live) return
    const source = new EventSource(url)
    source.addEventListener("task", (event) => {
      const task = JSON.parse((event as MessageEvent<string>).data) as TaskEvent
      if (task.status === "succeeded" || task.status === "failed") source.close()
      latest.current(task)
    })
    return () => source.close()
  }, [url, live])
}
