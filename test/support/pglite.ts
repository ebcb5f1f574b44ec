import { Effect, Layer } from "effect"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import * as PgliteClient from "../../src/platform/PgliteClient.ts"
import { seedPglite } from "./database.ts"

/**
 * A test's own embedded database (PgliteClient), empty as initdb leaves it:
 * a copy of the build's initdb directory (see `seedPglite`; or of its
 * migrated template when asked) in a scratch folder,
 * removed when the layer is released; in memory, from PGlite's own initdb,
 * where there is no template.
 */
export const pgliteLayer = (from: "initdb" | "template" = "initdb") =>
  Layer.unwrapScoped(
    Effect.acquireRelease(
      Effect.sync(() => {
        const dir = mkdtempSync(join(tmpdir(), "gw-pglite-"))
        return seedPglite(dir, from) ? dir : (rmSync(dir, { recursive: true, force: true }), undefined)
      }),
      (dir) => Effect.sync(() => dir !== undefined && rmSync(dir, { recursive: true, force: true }))
    ).pipe(Effect.map((dir) => PgliteClient.layer({ dataDir: dir === undefined ? undefined : join(dir, "pglite") })))
  )
