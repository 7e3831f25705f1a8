/**
 * CSV cells a spreadsheet opens safely: a formula is prefixed with `'` even
 * after leading whitespace or control characters, a cell starting with a
 * control character is too, NUL and other control characters are never
 * written, and plain numbers stay numbers.
 */
import { assert, describe, it } from "@effect/vitest"
import * as Csv from "../src/Csv.ts"

describe("CSV cells", () => {
  it("neutralise a formula at the start, after leading whitespace, or after control characters", () => {
    for (
      const value of [
        "=1+1",
        " =1+1",
        "  +cmd|' /C calc'!A0",
        "\t=1+1",
        "\u0000=1+1",
        "\u00a0@SUM(A1)",
        "\u200b=HYPERLINK(\"http://x\")",
        "\uff1d1+1",
        "\r\n-2+3"
      ]
    ) {
      const cell = Csv.cell(value)
      const unquoted = cell.startsWith("\"") ? cell.slice(1) : cell
      assert.isTrue(unquoted.startsWith("'"), `${JSON.stringify(value)} -> ${JSON.stringify(cell)}`)
    }
  })

  it("prefix a cell that starts with a control character, and write no NUL or escape character", () => {
    assert.strictEqual(Csv.cell("\rmodel"), "\"'\rmodel\"")
    assert.strictEqual(Csv.cell("gpt\u0000x"), "gpt\ufffdx")
    assert.strictEqual(Csv.cell("\u001b[31mred"), "'\ufffd[31mred")
    assert.strictEqual(Csv.cell("line\nbreak"), "\"line\nbreak\"")
  })

  it("leave plain text and numbers as they are", () => {
    assert.strictEqual(Csv.cell("gpt-4o-mini"), "gpt-4o-mini")
    assert.strictEqual(Csv.cell("-0.5"), "-0.5")
    assert.strictEqual(Csv.cell(12), "12")
    assert.strictEqual(Csv.cell("a, b"), "\"a, b\"")
  })
})
