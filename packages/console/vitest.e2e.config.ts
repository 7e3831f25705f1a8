import { defineConfig } from "vitest/config"

// Browser tests: the real server (node-http) driven by Chromium through
// playwright-core. They start the server themselves; see the package README.
export default defineConfig({
  test: {
    name: "console-e2e",
    root: import.meta.dirname,
    environment: "node",
    include: ["e2e/**/*.test.ts"],
    testTimeout: 120_000,
    hookTimeout: 180_000,
    fileParallelism: false
  }
})
