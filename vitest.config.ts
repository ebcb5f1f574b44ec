import { defineConfig } from "vitest/config"

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    // Builds dist/, which the process-level tests start (test/support/process.ts).
    globalSetup: ["test/support/build.ts"],
    // Each file boots its own gateway and database; two cores run two files at once.
    fileParallelism: true,
    maxWorkers: 2,
    testTimeout: 30_000,
    hookTimeout: 60_000
  }
})
