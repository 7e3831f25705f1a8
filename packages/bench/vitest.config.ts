import { defineConfig } from "vitest/config"

// The package on its own: `npx vitest run --config packages/bench/vitest.config.ts`.
// The root vitest.config.ts lists "bench" as a project too (`vitest run --project bench`).
export default defineConfig({
  test: {
    name: "bench",
    root: import.meta.dirname,
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000
  }
})
