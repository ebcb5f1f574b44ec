import { tmpdir } from "node:os"
import { join, relative, resolve } from "node:path"

/**
 * The path of a fixture folder (test/fixtures/...) as a copy of `config/`
 * names it: a `../` path from the config directory, the form an operator
 * uses for an extension of their own. configWith's copies live one level
 * under the temporary directory, so the path is the same for each.
 */
export const fixtureRef = (fixture: string) =>
  relative(join(tmpdir(), "gw-config-copy"), resolve("test/fixtures", fixture))
