import chromium from "@sparticuz/chromium"
import { execFileSync } from "node:child_process"
import { existsSync, mkdirSync, readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { join, resolve } from "node:path"
import { type Browser, chromium as playwright, type Page } from "playwright-core"

/**
 * Headless Chromium for the console's end-to-end tests: the binary shipped
 * inside the `@sparticuz/chromium` package (Playwright's own download cannot
 * work on this closed network), driven by `playwright-core`.
 */
/**
 * The package's flags are made for serverless hosts. Two are left out here:
 * `--single-process` (closing one browser context then ends the whole
 * browser) and `--disable-web-security` (the tests must see the same-origin
 * rules a real browser applies).
 */
const DROPPED = new Set(["--single-process", "--disable-web-security"])

export const launchBrowser = async (): Promise<Browser> =>
  playwright.launch({
    executablePath: await chromium.executablePath(),
    args: [
      ...chromium.args.filter((arg) => !DROPPED.has(arg)),
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run"
    ]
  })

/** The console's front end, built once if a fresh checkout skipped `npm install`'s prepare step. */
export const ensureConsoleBuilt = () => {
  if (!existsSync(resolve("console/dist/index.html"))) {
    execFileSync("npx", ["vite", "build", "--config", "console/vite.config.ts"], { stdio: "inherit" })
  }
}

/** Every error the page logs (console errors, CSP violations, uncaught exceptions), for the test to assert none. */
export const collectErrors = (page: Page) => {
  const errors: Array<string> = []
  page.on("console", (m) => {
    if (m.type() === "error") errors.push(`console: ${m.text()}`)
  })
  page.on("pageerror", (e) => errors.push(`page: ${e.message}`))
  return errors
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8")

/**
 * axe-core's serious and critical violations on the page. It is evaluated
 * through the DevTools protocol, which the page's Content-Security-Policy
 * does not govern, so the policy stays as strict in the test as in use.
 */
export const axeViolations = async (page: Page) => {
  await page.evaluate(axeSource)
  const violations = await page.evaluate(async () => {
    const result = await (window as any).axe.run(document, { resultTypes: ["violations"] })
    return result.violations.map((v: any) => ({
      id: v.id,
      impact: v.impact,
      nodes: v.nodes.map((n: any) => n.target.join(" "))
    }))
  })
  return (violations as Array<{ id: string; impact: string; nodes: Array<string> }>).filter((v) =>
    v.impact === "serious" || v.impact === "critical"
  )
}

export const SCREENSHOTS = resolve("test-results/console")

/**
 * Looks at the current page at 360 px and at 1280 px wide: a full-page
 * screenshot of each, no sideways overflow, and no serious or critical
 * accessibility violation. Returns the problems found.
 */
export const inspectPage = async (page: Page, name: string) => {
  mkdirSync(SCREENSHOTS, { recursive: true })
  const problems: Array<string> = []
  for (const width of [360, 1280]) {
    await page.setViewportSize({ width, height: width === 360 ? 780 : 900 })
    await page.waitForTimeout(150)
    await page.screenshot({ path: join(SCREENSHOTS, `${name}-${width}.png`), fullPage: true })
    const overflow = await page.evaluate(() =>
      document.documentElement.scrollWidth - document.documentElement.clientWidth
    )
    if (overflow > 0) problems.push(`${name} at ${width}px overflows sideways by ${overflow}px`)
    for (const v of await axeViolations(page)) {
      problems.push(`${name} at ${width}px: ${v.impact} ${v.id} at ${v.nodes.join(", ")}`)
    }
  }
  return problems
}
