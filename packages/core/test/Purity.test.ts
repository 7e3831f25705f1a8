import { assert, describe, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import { builtinModules } from "node:module"
import { join } from "node:path"

/**
 * core, the adapters and the engine promise to run in any JavaScript runtime (Node, Bun,
 * Deno, workers). This guard fails on any import of a Node built-in or of a platform
 * package from their sources, and on any use of a Node global (`process`, `Buffer`,
 * `require`, `__dirname`, `__filename`). It is the one purity test of these packages.
 */
const pureSources = [
  "core",
  "openai-adapter",
  "genai-adapter",
  "anthropic-adapter",
  "bedrock-adapter",
  "vertex",
  "engine"
]
const builtins = new Set(builtinModules)
const forbidden = (specifier: string) =>
  specifier.startsWith("node:") ||
  builtins.has(specifier.split("/")[0]!) ||
  specifier.startsWith("@effect/platform") ||
  specifier.startsWith("@effect/sql") ||
  specifier === "undici"

/** Node's globals, in code (`process.env`, `Buffer.from`, `require("x")`, `__dirname`). */
const nodeGlobal = /\b(?:process|Buffer)\s*[.([]|\brequire\s*\(|\b__dirname\b|\b__filename\b/

const srcOf = (pkg: string) => join(import.meta.dirname, "..", "..", pkg, "src")

const files = (dir: string): Array<string> => {
  let entries: Array<import("node:fs").Dirent>
  try {
    entries = readdirSync(dir, { withFileTypes: true })
  } catch {
    return []
  }
  return entries.flatMap((entry) =>
    entry.isDirectory() ? files(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : []
  )
}

const specifiers = (source: string) =>
  Array.from(source.matchAll(/(?:from|import)\s*\(?\s*["']([^"']+)["']/g), (match) => match[1]!)

describe("purity", () => {
  for (const pkg of pureSources) {
    it(`${pkg} imports no Node built-in or platform package and uses no Node global`, () => {
      const sources = files(srcOf(pkg))
      assert.isNotEmpty(sources, `no sources found for ${pkg}`)
      const offenders: Array<string> = []
      for (const file of sources) {
        const source = readFileSync(file, "utf8")
        for (const specifier of specifiers(source)) {
          if (forbidden(specifier)) offenders.push(`${file}: imports ${specifier}`)
        }
        // Code only: prose in comments may say "process." at the end of a sentence.
        const code = source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:])\/\/.*$/gm, "$1")
        const global = nodeGlobal.exec(code)
        if (global !== null) offenders.push(`${file}: uses ${global[0]}`)
      }
      assert.deepStrictEqual(offenders, [])
    })
  }

  it("fast-check, an optional peer of the adapters, is imported only by their src/testing (never by core or the engine)", () => {
    const offenders: Array<string> = []
    for (const pkg of pureSources) {
      const src = srcOf(pkg)
      for (const file of files(src)) {
        if (pkg.endsWith("-adapter") && file.startsWith(join(src, "testing"))) continue
        for (const specifier of specifiers(readFileSync(file, "utf8"))) {
          if (specifier === "fast-check" || specifier.startsWith("fast-check/")) {
            offenders.push(`${file}: imports ${specifier}`)
          }
        }
      }
    }
    assert.deepStrictEqual(offenders, [])
  })
})
