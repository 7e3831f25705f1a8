/**
 * The batch writer's hand-written multi-row INSERTs (`MultiInsert`): the
 * text `sql.insert` would give, its parameters row after row (`undefined`
 * as null), `$n` placeholders for PostgreSQL, and a kept text that still
 * fits a batch of another size or shape.
 */
import { assert, describe, it } from "@effect/vitest"
import * as MultiInsert from "../src/internal/MultiInsert.ts"

describe("MultiInsert", () => {
  it("writes the rows' columns, placeholders and parameters", () => {
    const rows = [{ id: "a", amount: 1n, note: undefined }, { id: "b", amount: -2n, note: "x" }] as const
    assert.deepStrictEqual(MultiInsert.multiInsert("ledger", rows, false, "RETURNING id"), [
      `INSERT INTO ledger ("id", "amount", "note") VALUES (?, ?, ?), (?, ?, ?) RETURNING id`,
      ["a", 1n, null, "b", -2n, "x"]
    ])
    assert.deepStrictEqual(MultiInsert.multiInsert("ledger", rows, true, ""), [
      `INSERT INTO ledger ("id", "amount", "note") VALUES ($1, $2, $3), ($4, $5, $6)`,
      ["a", 1n, null, "b", -2n, "x"]
    ])
  })

  it("keeps a text per table, columns, row count and dialect", () => {
    const one = MultiInsert.multiInsert("t", [{ a: 1, b: 2 }], false, "")
    const other = MultiInsert.multiInsert("t", [{ a: 1, c: 2 }], false, "")
    const three = MultiInsert.multiInsert("t", [{ a: 1, b: 2 }, { a: 3, b: 4 }, { a: 5, b: 6 }], false, "")
    assert.strictEqual(one[0], `INSERT INTO t ("a", "b") VALUES (?, ?)`)
    assert.strictEqual(other[0], `INSERT INTO t ("a", "c") VALUES (?, ?)`)
    assert.strictEqual(three[0], `INSERT INTO t ("a", "b") VALUES (?, ?), (?, ?), (?, ?)`)
    assert.deepStrictEqual(three[1], [1, 2, 3, 4, 5, 6])
    assert.strictEqual(
      MultiInsert.multiInsert("u", [{ a: 1, b: 2 }], false, "")[0],
      `INSERT INTO u ("a", "b") VALUES (?, ?)`
    )
  })
})
