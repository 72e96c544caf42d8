// make lint: eslint over the extension and the e2e driver, with typescript-eslint's
// recommended rules (docs/decisions.md, "Checks in CI"). Types are checked by tsc --noEmit.
import js from "@eslint/js";
import tseslint from "typescript-eslint";

export default tseslint.config(
  { ignores: ["out/**", "node_modules/**", ".venv/**", "benchmarks/**", "test-artifacts/**"] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    files: ["extension/src/**/*.ts", "tests/e2e/**/*.ts"],
    languageOptions: { ecmaVersion: 2022, sourceType: "module" },
  },
);
