import { assert, describe, it } from "@effect/vitest"
import * as Ids from "../src/call/Ids.ts"

describe("Ids.requestId", () => {
  it("is req_ and 24 hex characters, and ids made later sort later", async () => {
    const first = Ids.requestId()
    assert.match(first, /^req_[0-9a-f]{24}$/)
    await new Promise((resolve) => setTimeout(resolve, 5))
    const later = Array.from({ length: 50 }, () => Ids.requestId())
    for (const id of later) {
      assert.match(id, /^req_[0-9a-f]{24}$/)
      assert.isTrue(id > first, `${id} sorts after ${first}`)
    }
    assert.strictEqual(new Set(later).size, later.length)
  })
})
