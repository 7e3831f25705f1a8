import { assert, describe, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import { builtinModules } from "node:module"
import { join } from "node:path"

/**
 * core, the adapters and the engine promise to run in any JavaScript runtime (Node, Bun,
 * Deno, workers). This guard fails on any import of a Node built-in, or of a
 * platform package, from their sources.
 */
const pureSources = ["core", "openai-adapter", "genai-adapter", "anthropic-adapter", "engine"]
const builtins = new Set(builtinModules)
const forbidden = (specifier: string) =>
  specifier.startsWith("node:") ||
  builtins.has(specifier.split("/")[0]!) ||
  specifier.startsWith("@effect/platform") ||
  specifier.startsWith("@effect/sql") ||
  specifier === "undici"

const files = (dir: string): Array<string> => {
  let entries: Array<import("node:fs").Dirent>
  try {
    entries = readdirSync(dir, { withFileTypes: true })
  } catch {
    return []
  }
  return entries.flatMap((entry) => entry.isDirectory() ? files(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : [])
}

describe("purity", () => {
  it("core, adapters and engine import no Node built-ins or platform packages", () => {
    const offenders: Array<string> = []
    for (const pkg of pureSources) {
      for (const file of files(join(import.meta.dirname, "..", "..", pkg, "src"))) {
        const source = readFileSync(file, "utf8")
        for (const match of source.matchAll(/(?:from|import)\s*\(?\s*["']([^"']+)["']/g)) {
          if (forbidden(match[1]!)) offenders.push(`${file}: ${match[1]}`)
        }
        // Code only: prose in comments may say "process." at the end of a sentence.
        const code = source.replace(/\/\*[\s\S]*?\*\//g, "").replace(/(^|[^:])\/\/.*$/gm, "$1")
        if (/\bprocess\.|\bBuffer\./.test(code)) offenders.push(`${file}: uses process or Buffer`)
      }
    }
    assert.deepStrictEqual(offenders, [])
  })

  it("fast-check, an optional peer of the adapters, is imported only by their src/testing", () => {
    const offenders: Array<string> = []
    for (const pkg of pureSources) {
      const src = join(import.meta.dirname, "..", "..", pkg, "src")
      for (const file of files(src)) {
        if (file.startsWith(join(src, "testing"))) continue
        const source = readFileSync(file, "utf8")
        for (const match of source.matchAll(/(?:from|import)\s*\(?\s*["']([^"']+)["']/g)) {
          if (match[1] === "fast-check" || match[1]!.startsWith("fast-check/")) offenders.push(`${file}: ${match[1]}`)
        }
      }
    }
    assert.deepStrictEqual(offenders, [])
  })
})
