/**
 * docs/api.md lists every endpoint of the management API, with the method
 * and path the server routes (the endpoint table is the source of both).
 */
import { assert, describe, it } from "@effect/vitest"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import * as Endpoints from "../src/Endpoints.ts"

describe("docs/api.md", () => {
  it("lists every endpoint", () => {
    const docs = readFileSync(join(import.meta.dirname, "..", "..", "..", "docs", "api.md"), "utf8")
    const endpoints = (Object.values(Endpoints) as ReadonlyArray<unknown>).filter((value): value is Endpoints.Endpoint =>
      typeof value === "object" && value !== null && "method" in value && "path" in value
    )
    assert.isAbove(endpoints.length, 40)
    const missing = endpoints.map((e) => `\`${e.method} ${e.path}\``).filter((row) => !docs.includes(row))
    assert.deepStrictEqual(missing, [], "endpoints missing from docs/api.md")
  })
})
