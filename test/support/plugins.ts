import { readFileSync } from "node:fs"
import { join } from "node:path"
import type { VideoFamily } from "../../src/catalog/contract/Capabilities.ts"
import type { ImageFamily } from "../../src/catalog/contract/ImageCapabilities.ts"

/**
 * The families a configuration directory serves, loaded as the service loads
 * them: each built-in name of `models.json`'s `plugins` from `plugins/`, so a
 * test that lists models derives them from the config (a new family in
 * `plugins/` and `config/` needs no test edited).
 */
export const configuredFamilies = async (dir = "config"): Promise<Array<VideoFamily | ImageFamily>> => {
  const { plugins } = JSON.parse(readFileSync(join(dir, "models.json"), "utf8")) as { plugins: Array<string> }
  return Promise.all(plugins.map(async (name) => {
    if (name.startsWith(".")) throw new Error(`configuredFamilies reads built-in plugins only, not "${name}"`)
    return (await import(`../../plugins/${name}/index.ts`)).default as VideoFamily | ImageFamily
  }))
}

/** The ids of every model a configuration directory's plugins define. */
export const configuredModelIds = async (dir = "config") =>
  (await configuredFamilies(dir)).flatMap((f) => f.models.map((m) => m.id)).sort()
