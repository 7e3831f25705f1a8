import { defineConfig } from "vitest/config"

// One configuration over all packages: each package is a vitest project, so
// `pnpm test` at the root runs everything and `vitest --project core` runs one.
// Packages with needs of their own (the console's jsdom and browser tests) keep
// a config file beside their code, referenced here.
const node = [
  "core",
  "openai-adapter",
  "genai-adapter",
  "anthropic-adapter",
  "bedrock-adapter",
  "vertex",
  "engine",
  "store",
  "limits",
  "fake-upstream",
  "node-http",
  "demo",
  "admin-api",
  "bench"
]

export default defineConfig({
  test: {
    projects: [
      ...node.map((name) => ({
        test: {
          name,
          root: `packages/${name}`,
          include: ["test/**/*.test.ts"],
          testTimeout: 30_000,
          hookTimeout: 60_000,
          // The gateway's memory tests measure retained heap, which needs a collection on demand.
          ...(name === "node-http" ? { execArgv: ["--expose-gc"] } : {})
        }
      })),
      "packages/console/vitest.config.ts",
      "packages/console/vitest.e2e.config.ts"
    ]
  }
})
