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

/**
 * Module-level work in dependencies that a started gateway does not need, deferred to first use. Each
 * rewrite names the text it replaces, and the build fails if that text is gone (a dependency changed),
 * rather than silently holding the memory again.
 */
const deferrals: ReadonlyArray<
  { readonly file: RegExp; readonly from: string; readonly to: string; readonly why: string }
> = [
  {
    // Effect's CLI measures help text in graphemes. Built at load, the segmenter maps ICU's break data
    // (about 8 MB of the node binary made resident); a server that never prints help never needs it.
    why: "Intl.Segmenter built when effect/cli loads",
    file: /[\\/]effect[\\/]dist[\\/]cli[\\/]CliOutput\.js$/,
    from: `const graphemeSegmenter = /*#__PURE__*/new Intl.Segmenter(undefined, {
  granularity: "grapheme"
});`,
    to: `let graphemeSegmenterMade;
const graphemeSegmenter = { segment: text => (graphemeSegmenterMade ??=
  new Intl.Segmenter(undefined, { granularity: "grapheme" })).segment(text) };`
  }
]

// Chunks of an earlier build would stay beside the new ones (their names carry a hash).
rmSync(resolve(dirname(file), "chunks"), { recursive: true, force: true })
await build({
  input: here("./src/bin.ts"),
  platform: "node",
  logLevel: "warn",
  external: [/^node:/],
  plugins: [{
    name: "modelgate-deferrals",
    transform(code, id) {
      let out = code
      for (const d of deferrals) {
        if (!d.file.test(id)) continue
        if (!out.includes(d.from)) throw new Error(`bundle.ts: ${id} changed; cannot defer the ${d.why}`)
        out = out.replace(d.from, d.to)
      }
      // A rewrite keeps the lines where they were: the module's source map is declared unchanged.
      return out === code ? null : { code: out, map: { mappings: "" } }
    }
  }],
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
