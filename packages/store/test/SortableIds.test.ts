import { assert, describe, it } from "@effect/vitest"
import { newId, newSortableId } from "../src/internal/random.ts"

describe("newSortableId", () => {
  it("has newId's shape: the prefix, an underscore and 20 base62 characters", () => {
    assert.match(newSortableId("use"), /^use_[0-9A-Za-z]{20}$/)
    assert.strictEqual(newSortableId("led").length, newId("led").length)
  })

  it("sorts by the time it was made (so an index on it grows at its end)", () => {
    const times = [0, 1, 61, 62, 3_843, 1_700_000_000_000, 1_700_000_000_001, 1_800_000_000_000, 62 ** 8 - 1]
    const ids = times.map((t) => newSortableId("use", t))
    assert.deepStrictEqual([...ids].sort(), ids)
    // Two ids of the same millisecond differ (12 random characters).
    assert.notStrictEqual(newSortableId("use", 5), newSortableId("use", 5))
  })
})
