import { assert, describe, it } from "@effect/vitest"
import { readdirSync, readFileSync } from "node:fs"
import { builtinModules } from "node:module"
import { join } from "node:path"

const src = join(import.meta.dirname, "..", "src")

const files = (dir: string): Array<string> =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? files(join(dir, entry.name)) : entry.name.endsWith(".ts") ? [join(dir, entry.name)] : []
  )

describe("purity", () => {
  it("src imports no Node built-in and uses no Node global", () => {
    const builtins = new Set(builtinModules)
    for (const file of files(src)) {
      const text = readFileSync(file, "utf8")
      for (const [, specifier] of text.matchAll(/from "([^"]+)"/g)) {
        assert.isFalse(specifier!.startsWith("node:") || builtins.has(specifier!), `${file} imports ${specifier}`)
      }
      assert.isFalse(/\b(process|Buffer|require|__dirname)\b[.(]/.test(text), `${file} uses a Node global`)
    }
  })
})
