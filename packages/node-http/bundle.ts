/**
 * Builds what production runs: `dist/modelgate.mjs`, the `modelgate`
 * executable (`src/bin.ts`) and everything it imports in one ES module, with
 * only what is used of each package (Effect's barrels load every module:
 * running the sources costs about 210 MB of memory at idle, this bundle about
 * 120 MB) and no TypeScript to strip at start. Node built-ins stay imports.
 * What is imported only when configured (`import()`: node-redis, `pg`) goes
 * to `chunks/` beside it, so a gateway without a Redis or a PostgreSQL does
 * not hold those modules (about 11 MB at idle). `pnpm build` runs it after
 * the type check. `--out FILE` writes the bundle (and its `chunks/`)
 * elsewhere (the tests build one of their own).
 *
 * @since 0.1.0
 */
import { chmodSync, rmSync } from "node:fs"
import { basename, dirname, resolve } from "node:path"
import { fileURLToPath } from "node:url"
import { parseArgs } from "node:util"
import { build } from "rolldown"

const here = (path: string) => fileURLToPath(new URL(path, import.meta.url))
const { values } = parseArgs({ options: { out: { type: "string" } } })
const file = values.out === undefined ? here("./dist/modelgate.mjs") : resolve(values.out)

// Chunks of an earlier build would stay beside the new ones (their names carry a hash).
rmSync(resolve(dirname(file), "chunks"), { recursive: true, force: true })
await build({
  input: here("./src/bin.ts"),
  platform: "node",
  logLevel: "warn",
  external: [/^node:/],
  output: {
    // The executable, and beside it in chunks/ what it imports only when configured (node-redis, `pg`).
    dir: dirname(file),
    entryFileNames: basename(file),
    chunkFileNames: "chunks/[name]-[hash].mjs",
    format: "esm",
    // src/bin.ts's shebang is kept.
    sourcemap: true,
    // V8 keeps a module's source text while the process runs (a function is compiled when first called).
    // One character above U+00FF anywhere makes all of it a two-byte string; escaped, the bundle is held
    // at one byte a character. Comments (JSDoc) are not needed at run time.
    charset: "ascii",
    comments: false
  }
})
chmodSync(file, 0o755)
console.log(`built ${file}`)
