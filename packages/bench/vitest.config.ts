import { defineConfig } from "vitest/config"

// Used until the root vitest.config.ts lists "bench" among its projects:
// `npx vitest run --config packages/bench/vitest.config.ts`.
export default defineConfig({
  test: {
    name: "bench",
    root: import.meta.dirname,
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000
  }
})
