import { readdirSync, readFileSync } from "node:fs"
import { configDefaults, defineConfig } from "vitest/config"

/**
 * A test file that starts no database says so on its first line. With
 * `DATABASE_URL` set (the PostgreSQL pass, as CI runs it) such files are
 * left out: they would test the same thing a second time. A file about
 * what only PostgreSQL has (its connections, cut by a test) says so too and
 * runs only with `DATABASE_URL`. Any other file runs on both databases, so a
 * file without such a line is never left out by mistake.
 *
 * A file that measures what an observer outside the gateway sees per second
 * (a fake upstream counting requests in a one-second window) says it runs
 * alone: it runs after all the others, with nothing else on the machine, so
 * what it counts is the gateway's pacing and not another file's load
 * stalling the processes (the gateway's and the fake's alike).
 */
/** Where tests live: `test/`, and a family's or an adapter's own folder (`plugins/famH/famH.test.ts`). */
const ROOTS = ["test", "plugins", "channels"]
const tests = ROOTS.flatMap((root) =>
  readdirSync(root, { recursive: true, encoding: "utf8" })
    .map((name) => `${root}/${name}`)
    .filter((path) => path.endsWith(".test.ts"))
)
const firstLineIs = (line: string) => tests.filter((path) => readFileSync(path, "utf8").startsWith(line))
const databaseFree = firstLineIs("// Runs once: no database")
const postgresOnly = firstLineIs("// Runs on PostgreSQL only")
const alone = firstLineIs("// Runs alone")
const leftOut = [...configDefaults.exclude, ...(process.env.DATABASE_URL ? databaseFree : postgresOnly)]

export default defineConfig({
  test: {
    // Builds dist/, which the process-level tests start (test/support/process.ts).
    globalSetup: ["test/support/build.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // Each file boots its own gateway and database; two cores run two files at once. One pool serves every project
    // (vitest 3 reads the workers from here, never from a project), so a file that runs alone is a group of its own.
    fileParallelism: true,
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: {
          name: "suite",
          include: ROOTS.map((root) => `${root}/**/*.test.ts`),
          exclude: [...leftOut, ...alone],
          sequence: { groupOrder: 0 }
        }
      },
      // After the suite, one at a time: groups run in order, and a group of one file has the machine to itself.
      ...alone.map((file, i) => ({
        extends: true,
        test: { name: `alone ${i + 1}`, include: [file], exclude: leftOut, sequence: { groupOrder: i + 1 } }
      }))
    ]
  }
})
