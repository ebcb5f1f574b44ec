import type { Api } from "./Requests.ts"

/**
 * The Veo model ids this adapter knows, per API, and what Google said of
 * each (docs/adapters/veo.md, Models: the sources and dates). The table
 * only gives operators words: a route may name any id (a compatible
 * gateway behind `base_url` may serve others), so nothing here stops a
 * start or refuses a task; what Google serves is asked of Google (the
 * channel check with `check_models`, and the create's own 404).
 */

export interface KnownModel {
  readonly id: string
  readonly api: Api
  /** `current`: served by Google as far as its documentation says; `retired`: shut down. */
  readonly status: "current" | "retired"
  /** For a retired id: the day Google shut it down (UTC, ISO). */
  readonly shutDown?: string | undefined
  /** What Google names in its place, if anything. */
  readonly replacement?: string | undefined
}

export const MODELS: ReadonlyArray<KnownModel> = [
  // Gemini API: the 2.0 and 3.0 ids were shut down on 30 June 2026 (Gemini API changelog, 15 June 2026).
  { id: "veo-2.0-generate-001", api: "gemini", status: "retired", shutDown: "2026-06-30" },
  {
    id: "veo-3.0-generate-001",
    api: "gemini",
    status: "retired",
    shutDown: "2026-06-30",
    replacement: "veo-3.1-generate-preview"
  },
  {
    id: "veo-3.0-fast-generate-001",
    api: "gemini",
    status: "retired",
    shutDown: "2026-06-30",
    replacement: "veo-3.1-fast-generate-preview"
  },
  // The Veo 3.1 previews were shut down on 22 October 2026, Gemini Omni Flash (the Interactions API, another
  // protocol) named in their place.
  {
    id: "veo-3.1-generate-preview",
    api: "gemini",
    status: "retired",
    shutDown: "2026-10-22",
    replacement: "gemini-omni-1.1-flash"
  },
  {
    id: "veo-3.1-fast-generate-preview",
    api: "gemini",
    status: "retired",
    shutDown: "2026-10-22",
    replacement: "gemini-omni-1.1-flash"
  },
  {
    id: "veo-3.1-lite-generate-preview",
    api: "gemini",
    status: "retired",
    shutDown: "2026-10-22",
    replacement: "gemini-omni-1.1-flash"
  },
  // Vertex AI (Gemini Enterprise Agent Platform): the 3.1 GA ids; the 3.0 ids retired on 30 June 2026.
  { id: "veo-3.1-generate-001", api: "vertex", status: "current" },
  { id: "veo-3.1-fast-generate-001", api: "vertex", status: "current" },
  {
    id: "veo-3.0-generate-001",
    api: "vertex",
    status: "retired",
    shutDown: "2026-06-30",
    replacement: "veo-3.1-generate-001"
  },
  {
    id: "veo-3.0-fast-generate-001",
    api: "vertex",
    status: "retired",
    shutDown: "2026-06-30",
    replacement: "veo-3.1-fast-generate-001"
  }
]

export const knownModel = (api: Api, id: string) => MODELS.find((m) => m.api === api && m.id === id)

/** Words for an operator about a model Google did not find: what this adapter knows of it, if anything. */
export const retirementNote = (api: Api, id: string) => {
  const known = knownModel(api, id)
  if (known?.status !== "retired") return "not a model this API serves (unknown, or retired)"
  return `retired by Google on ${known.shutDown}${
    known.replacement === undefined ? "" : `; Google names ${known.replacement} in its place`
  }`
}
