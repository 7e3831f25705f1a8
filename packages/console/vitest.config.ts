import react from "@vitejs/plugin-react"
import { defineConfig } from "vitest/config"

// Component tests run in jsdom. The root config can reference this file as a
// project (`projects: ["packages/console/vitest.config.ts", ...]`).
export default defineConfig({
  plugins: [react()],
  test: {
    name: "console",
    root: import.meta.dirname,
    environment: "jsdom",
    include: ["test/**/*.test.ts", "test/**/*.test.tsx"],
    setupFiles: ["./test/setup.ts"],
    testTimeout: 30_000
  }
})
