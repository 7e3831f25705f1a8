import { defineConfig } from "vitest/config"

// The root vitest config lists packages as projects; this file lets the
// package run on its own too (`vitest run -c packages/admin-api/vitest.config.ts`).
export default defineConfig({
  test: {
    name: "admin-api",
    include: ["test/**/*.test.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000
  }
})
