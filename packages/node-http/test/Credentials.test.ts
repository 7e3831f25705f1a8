import { assert, describe, it } from "@effect/vitest"
import { presentedKey } from "../src/Credentials.ts"

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
    assert.strictEqual(presentedKey("gemini", { authorization: "Bearer c" }, "alt=sse"), "c")
    // gemini-cli in gateway mode sends an explicitly empty key
    assert.strictEqual(presentedKey("gemini", { "x-goog-api-key": "" }, ""), undefined)
  })

  it("reads Anthropic keys from x-api-key or bearer", () => {
    assert.strictEqual(presentedKey("anthropic", { "x-api-key": "k" }, ""), "k")
    assert.strictEqual(presentedKey("anthropic", { authorization: "Bearer t" }, ""), "t")
  })
})
