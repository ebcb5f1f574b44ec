import { Effect } from "effect"
import { uploadFiles } from "../client/Uploads.ts"
import type { Common } from "./Common.ts"
import { makeProgress } from "./Progress.ts"

/** The three-step upload of local files with a progress display over all their bytes. */
export const uploadWithProgress = (options: Common, paths: ReadonlyArray<string>) =>
  Effect.gen(function*() {
    if (paths.length === 0) return []
    const progress = yield* makeProgress({ json: options.json, step: 10 })
    return yield* uploadFiles(paths, {
      onProgress: (p) => progress.update((p.sentAll / p.totalAll) * 100, `uploading ${p.file.filename}`)
    }).pipe(Effect.ensuring(Effect.sync(progress.done)))
  })
