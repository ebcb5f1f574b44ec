/**
 * What text may reach the database. PostgreSQL stores neither NUL (text and
 * jsonb refuse `\u0000`) nor lone UTF-16 surrogates (not valid Unicode, so
 * not encodable as UTF-8), and deeply nested jsonb exhausts its stack. Every
 * string a request brings in is checked here before anything is stored, so
 * a caller's mistake is a 400 naming the field instead of a database error.
 */

/** JSON nesting allowed inside one member of a body (`metadata`, `provider_options`, ...). */
export const MAX_JSON_DEPTH = 64

/** Why `value` cannot be stored, or undefined when it can. */
export const textProblem = (value: string): string | undefined => {
  if (value.includes("\u0000")) return "contains a NUL character (\\u0000)"
  if (!value.isWellFormed()) return "contains a lone UTF-16 surrogate (not valid Unicode)"
  return undefined
}

export interface JsonProblem {
  /** Where, as `metadata.tags[2]`; empty for the top-level value. */
  readonly path: string
  readonly problem: string
}

const join = (path: string, key: string | number) =>
  typeof key === "number" ? `${path}[${key}]` : path === "" ? key : `${path}.${key}`

/**
 * The first string (key or value) in a parsed JSON value that cannot be
 * stored, or the first container nested deeper than MAX_JSON_DEPTH below a
 * top-level member. Iterative, so a hostile depth cannot overflow the stack.
 */
export const jsonProblem = (root: unknown): JsonProblem | undefined => {
  const stack: Array<{ readonly value: unknown; readonly path: string; readonly depth: number }> = [
    { value: root, path: "", depth: 0 }
  ]
  while (stack.length > 0) {
    const { depth, path, value } = stack.pop()!
    if (typeof value === "string") {
      const problem = textProblem(value)
      if (problem !== undefined) return { path, problem }
      continue
    }
    if (value === null || typeof value !== "object") continue
    if (depth > MAX_JSON_DEPTH) return { path, problem: `is nested deeper than ${MAX_JSON_DEPTH} levels` }
    if (Array.isArray(value)) {
      value.forEach((item, i) => stack.push({ value: item, path: join(path, i), depth: depth + 1 }))
      continue
    }
    for (const [key, item] of Object.entries(value)) {
      const keyProblem = textProblem(key)
      if (keyProblem !== undefined) {
        return { path: join(path, JSON.stringify(key)), problem: `has a key that ${keyProblem}` }
      }
      stack.push({ value: item, path: join(path, key), depth: depth + 1 })
    }
  }
  return undefined
}
