import { readdirSync, readFileSync } from "node:fs"
import { configDefaults, defineConfig } from "vitest/config"

/**
 * A test file that starts no database says so on its first line. With
 * `DATABASE_URL` set (the PostgreSQL pass, as CI runs it) such files are
 * left out: they would test the same thing a second time. A file about
 * what only PostgreSQL has (its connections, cut by a test) says so too and
 * runs only with `DATABASE_URL`. Any other file runs on both databases, so a
 * file without such a line is never left out by mistake.
 */
const firstLineIs = (line: string) =>
  readdirSync("test", { recursive: true, encoding: "utf8" })
    .map((name) => `test/${name}`)
    .filter((path) => path.endsWith(".test.ts") && readFileSync(path, "utf8").startsWith(line))
const databaseFree = firstLineIs("// Runs once: no database")
const postgresOnly = firstLineIs("// Runs on PostgreSQL only")

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: [...configDefaults.exclude, ...(process.env.DATABASE_URL ? databaseFree : postgresOnly)],
    // Builds dist/, which the process-level tests start (test/support/process.ts).
    globalSetup: ["test/support/build.ts"],
    // Each file boots its own gateway and database; two cores run two files at once.
    fileParallelism: true,
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000
  }
})
