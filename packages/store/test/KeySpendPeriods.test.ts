/**
 * The `key_spend` periods of a charge's time (`LeaseSql.periodsOf`): its UTC
 * day and month, right across day, month and year boundaries, and whichever
 * day was asked before (the last day's pair is kept between charges).
 */
import { assert, describe, it } from "@effect/vitest"
import * as LeaseSql from "../src/internal/LeaseSql.ts"

describe("key_spend periods", () => {
  it("names the UTC day and month of each time, in any order", () => {
    const times = [
      Date.UTC(2026, 10, 29, 3, 0, 0),
      Date.UTC(2026, 10, 29, 23, 59, 59, 999),
      Date.UTC(2026, 10, 30, 0, 0, 0),
      Date.UTC(2026, 10, 29, 12, 0, 0),
      Date.UTC(2026, 11, 1, 0, 0, 0),
      Date.UTC(2026, 10, 30, 23, 59, 59, 999),
      Date.UTC(2027, 0, 1, 0, 0, 0),
      Date.UTC(2026, 11, 31, 23, 59, 59, 999),
      Date.UTC(1969, 11, 31, 23, 0, 0),
      Date.UTC(1970, 0, 1, 0, 0, 0)
    ]
    for (const ms of times) {
      const iso = new Date(ms).toISOString()
      assert.deepStrictEqual(LeaseSql.periodsOf(ms), [`d:${iso.slice(0, 10)}`, `m:${iso.slice(0, 7)}`], iso)
      assert.deepStrictEqual(LeaseSql.periodsOf(ms), [LeaseSql.dayPeriod(ms), LeaseSql.monthPeriod(ms)], iso)
    }
  })

  it("refuses a time that is not one, as before", () => {
    assert.throws(() => LeaseSql.periodsOf(Number.NaN))
  })
})
