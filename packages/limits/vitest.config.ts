import { defineConfig } from "vitest/config"

// The package's own vitest project, for running its tests alone
// (`npx vitest run -c packages/limits/vitest.config.ts`); the root config lists it too.
export default defineConfig({
  test: {
    name: "limits",
    root: import.meta.dirname,
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000
  }
})
