/**
 * Builds what production runs: `dist/modelgate.mjs`, the `modelgate`
 * executable (`src/bin.ts`) and everything it imports in one ES module, with
 * only what is used of each package (Effect's barrels load every module:
 * running the sources costs about 210 MB of memory at idle, this bundle about
 * 120 MB) and no TypeScript to strip at start. Node built-ins stay imports.
 * `pnpm build` runs it after the type check; `node bundle.ts OUT` writes the
 * bundle to OUT instead (the bundle's own test does).
 *
 * @since 0.1.0
 */
import { build } from "rolldown"
import { chmodSync } from "node:fs"
import { fileURLToPath } from "node:url"

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))
const file = process.argv[2] ?? here("./dist/modelgate.mjs")

await build({
  input: here("./src/bin.ts"),
  platform: "node",
  logLevel: "warn",
  external: [/^node:/],
  output: {
    file,
    format: "esm",
    // src/bin.ts's shebang is kept.
    sourcemap: true
  }
})
chmodSync(file, 0o755)
console.log(`built ${file}`)
