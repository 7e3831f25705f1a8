import { defineConfig } from "vitest/config"

// One configuration over all packages: each package is a vitest project, so
// `pnpm test` at the root runs everything and `vitest --project core` runs one.
const pure = ["core", "openai-adapter", "genai-adapter"]
const io = ["store", "fake-upstream", "node-http"]

export default defineConfig({
  test: {
    projects: [...pure, ...io].map((name) => ({
      test: {
        name,
        root: `packages/${name}`,
        include: ["test/**/*.test.ts"],
        testTimeout: 30_000,
        hookTimeout: 60_000
      }
    }))
  }
})
