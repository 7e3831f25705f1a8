/**
 * Where each dialect's clients put their key: `presentedKey` of the client
 * dialects the engine serves.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Dialect } from "@modelgate/core"
import * as Dialects from "../src/call/Dialects.ts"

const presentedKey = (dialect: "openai" | "gemini" | "anthropic", headers: Dialect.HeaderBag, search: string) =>
  Dialects.client(dialect).presentedKey(headers, search)

describe("Credentials", () => {
  it("reads OpenAI bearer tokens only", () => {
    assert.strictEqual(presentedKey("openai", { authorization: "Bearer sk-1" }, ""), "sk-1")
    assert.strictEqual(presentedKey("openai", { authorization: "bearer   sk-2  " }, ""), "sk-2")
    assert.strictEqual(presentedKey("openai", { "x-goog-api-key": "sk-3" }, ""), undefined)
    assert.strictEqual(presentedKey("openai", { authorization: "Basic abc" }, ""), undefined)
  })

  it("reads Gemini keys from x-goog-api-key, ?key= and bearer, in that order", () => {
    assert.strictEqual(presentedKey("gemini", { "x-goog-api-key": "a", authorization: "Bearer c" }, "?key=b"), "a")
    assert.strictEqual(presentedKey("gemini", {}, "?alt=sse&key=b"), "b")
    assert.strictEqual(presentedKey("gemini", {}, "alt=sse&key=with%20space"), "with space")
    assert.strictEqual(presentedKey("gemini", { authorization: "Bearer c" }, "alt=sse"), "c")
    // gemini-cli in gateway mode sends an explicitly empty key
    assert.strictEqual(presentedKey("gemini", { "x-goog-api-key": "" }, ""), undefined)
  })
})
