// Runs once: no database (left out of the PostgreSQL pass, vitest.config.ts).
import { existsSync, readFileSync } from "node:fs"
import semver from "semver"
import { describe, expect, it } from "vitest"

/**
 * The Node versions the project says it supports (package.json `engines`)
 * must be supported by everything `npm install` puts in node_modules: a
 * dependency that declares a newer Node is a latent break (npm warns with
 * EBADENGINE and installs it anyway). Optional packages whose engines do not
 * match are skipped by npm and never installed, so only installed packages
 * are checked, against the oldest supported version and the running one.
 */

interface LockEntry {
  readonly engines?: { readonly node?: string }
}

const pkg = JSON.parse(readFileSync("package.json", "utf8")) as { engines: { node: string } }
const lock = JSON.parse(readFileSync("package-lock.json", "utf8")) as { packages: Record<string, LockEntry> }

describe("Node versions", () => {
  const oldest = semver.minVersion(pkg.engines.node)!.version
  const installed = Object.entries(lock.packages).filter(([path]) => path !== "" && existsSync(path))

  it("the running Node is one the project supports", () => {
    expect(semver.satisfies(process.version, pkg.engines.node)).toBe(true)
  })

  it(`every installed package supports Node ${oldest} and the running ${process.version}`, () => {
    expect(installed.length).toBeGreaterThan(100)
    const unsupported = installed.flatMap(([path, entry]) => {
      const range = entry.engines?.node
      if (range === undefined) return []
      return [oldest, process.version].filter((v) => !semver.satisfies(v, range)).map((v) =>
        `${path} (${range}) on ${v}`
      )
    })
    expect(unsupported).toEqual([])
  })
})
