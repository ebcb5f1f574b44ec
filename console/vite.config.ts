import { defineConfig } from "vite"

/**
 * The console's front end, served by the gateway at /console (src/console/).
 * Preact through esbuild's automatic JSX runtime, so no Babel preset is needed.
 * No module-preload polyfill: it would be an inline script, which the
 * console's Content-Security-Policy forbids.
 */
export default defineConfig({
  root: import.meta.dirname,
  base: "/console/",
  esbuild: { jsx: "automatic", jsxImportSource: "preact" },
  build: {
    outDir: "dist",
    emptyOutDir: true,
    modulePreload: { polyfill: false },
    // Kept as a file, never inlined as a data: URL (the policy allows fonts and styles from 'self').
    assetsInlineLimit: 0,
    sourcemap: false
  },
  logLevel: "warn"
})
