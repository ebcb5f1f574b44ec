// Lint and format in one pass, as the Effect repository does: typescript-eslint's
// recommended rules plus dprint (through @effect/eslint-plugin) as the formatter.
// `npm run lint` checks; `npm run format` rewrites.
import effect from "@effect/eslint-plugin"
import tseslint from "typescript-eslint"

export default tseslint.config(
  { ignores: ["node_modules/", "**/dist/", "data/", "coverage/", "test-results/", "**/*.d.ts"] },
  ...tseslint.configs.recommended,
  ...effect.configs.dprint,
  {
    files: ["**/*.ts", "**/*.mjs", "**/*.tsx"],
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
  }
)
