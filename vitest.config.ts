import { readdirSync, readFileSync } from "node:fs"
import { configDefaults, defineConfig } from "vitest/config"

/**
 * A test file that starts no database says so on its first line. With
 * `DATABASE_URL` set (the PostgreSQL pass, as CI runs it) such files are
 * left out: they would test the same thing a second time. Any other file
 * runs on both databases, so a file without the line is never skipped by mistake.
 */
const DATABASE_FREE = "// Runs once: no database"
const databaseFree = readdirSync("test")
  .filter((name) => name.endsWith(".test.ts") && readFileSync(`test/${name}`, "utf8").startsWith(DATABASE_FREE))
  .map((name) => `test/${name}`)

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    exclude: process.env.DATABASE_URL ? [...configDefaults.exclude, ...databaseFree] : configDefaults.exclude,
    // Builds dist/, which the process-level tests start (test/support/process.ts).
    globalSetup: ["test/support/build.ts"],
    // Each file boots its own gateway and database; two cores run two files at once.
    fileParallelism: true,
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000
  }
})
