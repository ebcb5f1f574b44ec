import { FileSystem, Path } from "@effect/platform"
import { Effect } from "effect"
import { AppConfig, ConfigurationError } from "./AppConfig.ts"

/**
 * Loads the extensions `config/models.json` names (family plugins, channel
 * adapters) at boot, so the core imports none of them: a name is a folder of
 * the built-in directory (`plugins/`, `channels/`), a `./` or `../` path is
 * a folder relative to the config directory (an operator's own extension).
 * A folder's `index.ts` is preferred; `index.js` serves compiled code.
 */

const ENTRY_FILES = ["index.ts", "index.js"]

export const isRelativeRef = (ref: string) => ref.startsWith("./") || ref.startsWith("../")

/** The default export of the extension `ref`; `what` and `where` name it in errors ("adapter", "channels.echo.adapter"). */
export const loadExtension = (ref: string, builtins: URL, what: string, where: string) =>
  Effect.gen(function*() {
    const fs = yield* FileSystem.FileSystem
    const path = yield* Path.Path
    const { configDir } = yield* AppConfig
    const refused = (problem: string) =>
      new ConfigurationError({ message: `config models.json: at ${where}: ${what} "${ref}" ${problem}` })

    const dir = isRelativeRef(ref)
      ? path.resolve(configDir, ref)
      : path.join(yield* path.fromFileUrl(builtins).pipe(Effect.orDie), ref)
    for (const name of ENTRY_FILES) {
      const file = path.join(dir, name)
      if (!(yield* fs.exists(file).pipe(Effect.orElseSucceed(() => false)))) continue
      const url = yield* path.toFileUrl(file).pipe(Effect.orDie)
      const module = yield* Effect.tryPromise({
        try: () => import(url.href) as Promise<{ readonly default?: unknown }>,
        catch: (e) => refused(`cannot be loaded: ${(e as Error).message}`)
      })
      if (module.default === undefined) return yield* refused(`has no default export in ${file}`)
      return module.default
    }
    return yield* refused(`is unknown: no ${ENTRY_FILES.join(" or ")} in ${dir}`)
  })
