import { useEffect, useState } from "preact/hooks"

/**
 * Routing by the URL's fragment (`#/tasks/…`): the server serves one
 * document at /console, and the fragment never reaches it or any log.
 */
export interface Route {
  readonly path: ReadonlyArray<string>
  readonly params: URLSearchParams
}

const parse = (): Route => {
  const raw = window.location.hash.replace(/^#\/?/, "")
  const [path = "", search = ""] = raw.split("?")
  return { path: path.split("/").filter(Boolean).map(decodeURIComponent), params: new URLSearchParams(search) }
}

export const useRoute = () => {
  const [route, setRoute] = useState(parse)
  useEffect(() => {
    const update = () => setRoute(parse())
    window.addEventListener("hashchange", update)
    return () => window.removeEventListener("hashchange", update)
  }, [])
  return route
}

export const href = (path: string, params?: Record<string, string | undefined>) => {
  const search = new URLSearchParams()
  for (const [k, v] of Object.entries(params ?? {})) if (v) search.set(k, v)
  const text = search.toString()
  return `#/${path}${text ? `?${text}` : ""}`
}

export const navigate = (path: string, params?: Record<string, string | undefined>) => {
  window.location.hash = href(path, params)
}
