/**
 * docs/api.md and the OpenAPI document list every endpoint of the contract,
 * with the method and path the server routes (the contract is the source of
 * all three).
 */
import { assert, describe, it } from "@effect/vitest"
import { HttpApi, OpenApi } from "effect/http-api"
import { readFileSync } from "node:fs"
import { join } from "node:path"
import { Api } from "../src/Api.ts"

const endpoints = () => {
  const all: Array<{ readonly method: string; readonly path: string }> = []
  HttpApi.reflect(Api, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) => all.push({ method: endpoint.method, path: endpoint.path })
  })
  return all
}

describe("the management API's endpoints", () => {
  it("are all in docs/api.md", () => {
    const docs = readFileSync(join(import.meta.dirname, "..", "..", "..", "docs", "api.md"), "utf8")
    const all = endpoints()
    assert.isAbove(all.length, 45)
    const missing = all.map((e) => `\`${e.method} ${e.path}\``).filter((row) => !docs.includes(row))
    assert.deepStrictEqual(missing, [], "endpoints missing from docs/api.md")
  })

  it("are all in the OpenAPI document, with their error responses and security", () => {
    const spec = OpenApi.fromApi(Api)
    const missing = endpoints().filter((e) => {
      const path = e.path.replace(/:([A-Za-z]+)/g, "{$1}")
      return (spec.paths[path] as Record<string, unknown> | undefined)?.[e.method.toLowerCase()] === undefined
    })
    assert.deepStrictEqual(missing, [], "endpoints missing from the OpenAPI document")
    const createKey = spec.paths["/api/keys"]!.post!
    assert.includeMembers(Object.keys(createKey.responses), ["201", "400", "401", "403", "429"])
    assert.deepStrictEqual(createKey.security, [{ session: [] }, { bearer: [] }])
    assert.deepStrictEqual(spec.paths["/api/auth/login"]!.post!.security, [], "signing in needs no credentials")
    assert.deepStrictEqual(Object.keys(spec.components.securitySchemes).sort(), ["bearer", "session"])
  })

  it("documents a model's cache-write price and a channel's responses switch", () => {
    const spec = OpenApi.fromApi(Api)
    const properties = (path: string, method: "post" | "patch") =>
      (spec.paths[path]![method]!.requestBody as unknown as {
        content: Record<string, { schema: { properties: Record<string, any> } }>
      })
        .content["application/json"]!.schema.properties
    assert.property(properties("/api/admin/models", "post").prices.properties, "cacheWrite")
    assert.property(properties("/api/admin/channels", "post"), "responses")
    assert.property(properties("/api/admin/channels/{id}", "patch"), "responses")
  })
})
