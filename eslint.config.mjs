// Lint and format in one pass, as the Effect repository does: typescript-eslint's
// recommended rules plus dprint (through @effect/eslint-plugin) as the formatter.
// `npm run lint` checks (this, then dependency-cruiser's import rules in
// .dependency-cruiser.cjs); `npm run format` rewrites. Two of the
// architecture's rules are ESLint's, because they are about names rather than
// files: the HTTP server's modules only in handlers, and no Node global in
// the runtime-neutral core (test/service/lint-rules.test.ts plants a violation of each).
import effect from "@effect/eslint-plugin"
import tseslint from "typescript-eslint"

/** @effect/platform's server side: a request, an answer, a router. Services never see them. */
const HTTP_SERVER = [
  "HttpServerRequest",
  "HttpServerResponse",
  "HttpApiBuilder",
  "HttpRouter",
  "HttpApp",
  "HttpMiddleware"
]

/** Where the HTTP server is spoken: handlers, the HTTP platform, middleware implementations, the runtime and the composition. */
const HTTP_PLACES = [
  "src/**/*Http.ts",
  "src/platform/http/**",
  "src/accounts/Auth.ts",
  "src/runtime/**",
  "src/Gateway.ts",
  "src/console/ConsoleAuth.ts",
  "src/console/StaticFiles.ts"
]

/** Node-only code: the runtime layer and the Node entry points. */
const NODE_PLACES = ["src/runtime/**", "src/main.ts", "src/cli/main.ts"]

export default tseslint.config(
  { ignores: ["node_modules/", "**/dist/", "data/", "coverage/", "test-results/", "**/*.d.ts"] },
  ...tseslint.configs.recommended,
  ...effect.configs.dprint,
  {
    files: ["**/*.ts", "**/*.mjs", "**/*.cjs", "**/*.tsx"],
    rules: {
      "@effect/dprint": ["error", {
        config: {
          indentWidth: 2,
          lineWidth: 120,
          semiColons: "asi",
          quoteStyle: "alwaysDouble",
          trailingCommas: "never",
          operatorPosition: "maintain",
          "arrowFunction.useParentheses": "force"
        }
      }],
      // Effect's generators and tagged errors read better with these off.
      "require-yield": "off",
      "@typescript-eslint/no-explicit-any": "off",
      "@typescript-eslint/no-empty-object-type": "off",
      "@typescript-eslint/no-namespace": "off",
      "@typescript-eslint/no-unused-vars": ["error", {
        argsIgnorePattern: "^_",
        varsIgnorePattern: "^_",
        caughtErrors: "none"
      }]
    }
  },
  {
    files: ["src/**/*.ts"],
    ignores: HTTP_PLACES,
    rules: {
      "no-restricted-imports": ["error", {
        paths: [{
          name: "@effect/platform",
          importNames: HTTP_SERVER,
          message: "The HTTP server belongs to handlers (*Http.ts) and platform/http; services take and return values."
        }],
        patterns: [{
          group: ["**/platform/http/*"],
          importNames: ["readJson", "readForm", "readQuery", "readBody"],
          message: "Reading the request belongs to handlers (*Http.ts); services take the values read."
        }]
      }]
    }
  },
  {
    files: ["src/**/*.ts", "channels/**/*.ts", "plugins/**/*.ts"],
    ignores: NODE_PLACES,
    rules: {
      "no-restricted-globals": [
        "error",
        ...["process", "Buffer", "__dirname", "__filename", "require"].map((name) => ({
          name,
          message:
            "A Node global: the core runs on Deno too; the runtime layer (src/runtime/) provides what Node gives."
        }))
      ]
    }
  }
)
