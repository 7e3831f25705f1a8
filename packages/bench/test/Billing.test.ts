import { assert, describe, it } from "@effect/vitest"
import { mkdtempSync, rmSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { DatabaseSync } from "node:sqlite"
import {
  type BillingInput,
  formatUsd,
  judgeBilling,
  notChecked,
  parseUsd,
  readApiBalance,
  readApiUsage,
  readSqliteBooks
} from "../src/Billing.ts"

const calls = { sent: 1010, ok: 1000, refused: 4, unsure: 6 }
const good: BillingInput = {
  source: "sqlite",
  calls,
  balanceBeforeNanos: 1_000_000_000_000_000_000n,
  balanceAfterNanos: 1_000_000_000_000_000_000n - 123_456_000n,
  records: 1009,
  okRecords: 1003,
  chargedNanos: 123_456_000n,
  ledgerNanos: 1_000_000_000_000_000_000n - 123_456_000n,
  open: 0
}

describe("Billing", () => {
  it("formats and parses USD in nano-dollars", () => {
    assert.strictEqual(formatUsd(123_456_000n), "0.123456")
    assert.strictEqual(formatUsd(5n * 1_000_000_000n), "5")
    assert.strictEqual(formatUsd(-1n), "-0.000000001")
    assert.strictEqual(parseUsd("1000000000.00", "x"), 1_000_000_000_000_000_000n)
    assert.strictEqual(parseUsd("-0.5", "x"), -500_000_000n)
    assert.throws(() => parseUsd("1.0000000001", "balance_usd"), /balance_usd: "1.0000000001" is not a USD amount/)
  })

  it("verifies records within the calls cut off in flight, and a balance down by the charges", () => {
    const v = judgeBilling(good)
    assert.strictEqual(v.status, "verified")
    assert.deepStrictEqual(v.problems, [])
    assert.strictEqual(
      v.summary,
      "billing verified: 1003 usage records, 0.123456 USD charged (1000 successful calls, 6 cut off in flight)"
    )
    assert.strictEqual(v.balanceBeforeUsd, "1000000000")
  })

  it("names each way the books can be wrong", () => {
    const problems = (over: Partial<BillingInput>): ReadonlyArray<string> => judgeBilling({ ...good, ...over }).problems
    assert.match(
      problems({ okRecords: 990 })[0],
      /990 successful usage records for 1000 successful calls: 10 calls were not recorded/
    )
    assert.match(problems({ okRecords: 1007 })[0], /more than the 1000 successful calls plus 6 cut off in flight/)
    assert.match(
      problems({
        chargedNanos: 0n,
        balanceAfterNanos: good.balanceBeforeNanos,
        ledgerNanos: good.balanceBeforeNanos
      })[0],
      /nothing was charged/
    )
    assert.match(
      problems({ balanceAfterNanos: good.balanceBeforeNanos, ledgerNanos: good.balanceBeforeNanos })[0],
      /the balance did not go down/
    )
    assert.match(
      problems({ balanceAfterNanos: good.balanceAfterNanos - 1n, ledgerNanos: good.balanceAfterNanos - 1n })[0],
      /went down by 0.123456001 USD but the usage records charge 0.123456 USD/
    )
    assert.match(problems({ ledgerNanos: 0n })[0], /is not the ledger's sum/)
    assert.match(problems({ open: 2 })[0], /2 holds or balance leases are still open/)
    const failed = judgeBilling({ ...good, open: 2 })
    assert.strictEqual(failed.status, "failed")
    assert.match(failed.summary, /^billing check FAILED: /)
    // From the API, all records (failed calls too) lie between the successful calls and all calls sent.
    const { ledgerNanos: _ledger, open: _open, ...rest } = good
    const api: BillingInput = { ...rest, source: "api", okRecords: null }
    assert.strictEqual(judgeBilling({ ...api, records: 1010 }).status, "verified")
    assert.match(judgeBilling({ ...api, records: 1011 }).problems[0], /more than the 1010 calls sent/)
    assert.strictEqual(notChecked("no gateway").summary, "billing not checked: no gateway")
  })

  it("reads a user's books from a modelgate SQLite file", () => {
    const dir = mkdtempSync(join(tmpdir(), "bench-billing-"))
    const file = join(dir, "modelgate.db")
    try {
      const db = new DatabaseSync(file)
      // The columns the reader uses, as in packages/store/src/Migrations.ts.
      db.exec(`CREATE TABLE users (id TEXT PRIMARY KEY, name TEXT NOT NULL UNIQUE, balance_nanos BIGINT NOT NULL);
        CREATE TABLE usage_records (id TEXT PRIMARY KEY, created_at BIGINT NOT NULL, user_id TEXT NOT NULL, status INTEGER NOT NULL, cost_nanos BIGINT NOT NULL);
        CREATE TABLE ledger (id TEXT PRIMARY KEY, user_id TEXT NOT NULL, amount_nanos BIGINT NOT NULL);
        CREATE TABLE holds (id TEXT PRIMARY KEY, user_id TEXT NOT NULL);
        CREATE TABLE leases (id TEXT PRIMARY KEY, user_id TEXT NOT NULL);`)
      const insert = (sql: string, ...params: Array<string | number | bigint>) => db.prepare(sql).run(...params)
      insert("INSERT INTO users VALUES ('u1', 'bench', ?)", 999_999_999_999_999_000n)
      insert("INSERT INTO users VALUES ('u2', 'other', 5)")
      insert("INSERT INTO ledger VALUES ('l1', 'u1', ?)", 1_000_000_000_000_000_000n)
      insert("INSERT INTO ledger VALUES ('l2', 'u1', -1000)")
      insert("INSERT INTO usage_records VALUES ('r0', 10, 'u1', 200, 100)")
      insert("INSERT INTO usage_records VALUES ('r1', 2000, 'u1', 200, 400)")
      insert("INSERT INTO usage_records VALUES ('r2', 2001, 'u1', 200, 600)")
      insert("INSERT INTO usage_records VALUES ('r3', 2002, 'u1', 502, 0)")
      insert("INSERT INTO usage_records VALUES ('r4', 2003, 'u2', 200, 7)")
      insert("INSERT INTO leases VALUES ('x', 'u1')")
      db.close()
      assert.deepStrictEqual(readSqliteBooks(file, "bench", 1000), {
        balanceNanos: 999_999_999_999_999_000n,
        ledgerNanos: 999_999_999_999_999_000n,
        records: 3,
        okRecords: 2,
        chargedNanos: 1000n,
        open: 1
      })
      assert.throws(() => readSqliteBooks(file, "nobody"), /no user named "nobody"/)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })

  it("reads the balance and usage sums from the API", async () => {
    const seen: Array<string> = []
    const get = async (url: string, headers: Readonly<Record<string, string>>): Promise<unknown> => {
      seen.push(`${url} ${headers.authorization}`)
      if (url.endsWith("/api/me")) return { balance_usd: "12.50" }
      return {
        data: [{ day: "2026-11-22", model: "a", requests: 3, cost: "0.000001" }, {
          day: "2026-11-22",
          model: "b",
          requests: 2,
          cost: "1"
        }]
      }
    }
    const headers = { authorization: "Bearer k" }
    assert.strictEqual(await readApiBalance("http://gw", headers, get), 12_500_000_000n)
    assert.deepStrictEqual(await readApiUsage("http://gw", headers, 1234.5, get), {
      records: 5,
      chargedNanos: 1_000_001_000n
    })
    assert.deepStrictEqual(seen, ["http://gw/api/me Bearer k", "http://gw/api/usage/daily?from=1234 Bearer k"])
    const broken = async (): Promise<unknown> => ({ data: [{ requests: "3" }] })
    const message = await readApiUsage("http://gw", headers, 0, broken).then(() => "", (e: Error) => e.message)
    assert.match(message, /data\[0\] needs "requests" \(number\) and "cost"/)
  })
})
