/**
 * Checks, after a run, that the gateway really billed the calls it served:
 * its usage records match the successful calls the load generator counted
 * (give or take the calls that were cut off in flight), money was charged,
 * and the user's balance went down by exactly that.
 *
 * Two sources:
 * - `readSqliteBooks`: the gateway's SQLite file, read with `node:sqlite`
 *   after the gateway has stopped (SIGTERM flushes every usage record and
 *   returns every balance lease), so the figures are final;
 * - `readApiBalance` / `readApiUsage`: a running gateway's `/api/me` and
 *   `/api/usage/daily`, with the benchmark key (a gateway started outside
 *   the benchmark).
 *
 * @since 0.1.0
 */
import { DatabaseSync } from "node:sqlite"
import type { CallCount } from "./Runner.ts"

const NANOS = 1_000_000_000n

/** Nano-dollars as a USD decimal ("1.5", "0.000123"). @category money */
export const formatUsd = (nanos: bigint): string => {
  const negative = nanos < 0n
  const abs = negative ? -nanos : nanos
  const fraction = (abs % NANOS).toString().padStart(9, "0").replace(/0+$/, "")
  return `${negative ? "-" : ""}${abs / NANOS}${fraction === "" ? "" : `.${fraction}`}`
}

/** Parses a USD decimal ("12.5", "-0.000000001") into nano-dollars; throws naming `what`. @category money */
export const parseUsd = (text: string, what: string): bigint => {
  const match = /^(-?)(\d+)(?:\.(\d{1,9}))?$/.exec(text.trim())
  if (match === null) throw new Error(`${what}: "${text}" is not a USD amount`)
  const nanos = BigInt(match[2]) * NANOS + BigInt((match[3] ?? "").padEnd(9, "0"))
  return match[1] === "-" ? -nanos : nanos
}

/** A user's books as the gateway's database holds them. @category models */
export interface Books {
  readonly balanceNanos: bigint
  /** Sum of the user's ledger entries (equals the balance when the books are consistent). */
  readonly ledgerNanos: bigint
  /** Usage records of the user (every call, failed ones included). */
  readonly records: number
  /** Usage records with a 2xx status. */
  readonly okRecords: number
  /** Sum of the records' costs. */
  readonly chargedNanos: bigint
  /** Balance leases and holds still open (0 after a clean stop). */
  readonly open: number
}

const big = (value: unknown, what: string): bigint => {
  if (typeof value === "bigint") return value
  if (typeof value === "number" && Number.isInteger(value)) return BigInt(value)
  if (value === null) return 0n
  throw new Error(`${what}: expected an integer, got ${String(value)}`)
}

/**
 * Reads user `userName`'s books from a modelgate SQLite file (read-only),
 * counting only usage records created at or after `sinceMs`.
 *
 * @category read
 */
export const readSqliteBooks = (file: string, userName: string, sinceMs = 0): Books => {
  const db = new DatabaseSync(file, { readOnly: true })
  try {
    const query = (text: string, ...params: Array<string | number>): Record<string, unknown> => {
      const statement = db.prepare(text)
      statement.setReadBigInts(true)
      return (statement.get(...params) ?? {}) as Record<string, unknown>
    }
    const user = query("SELECT id, balance_nanos FROM users WHERE name = ?", userName)
    if (typeof user.id !== "string") throw new Error(`${file}: no user named "${userName}"`)
    const id = user.id
    const usage = query(
      `SELECT COUNT(*) AS records, COALESCE(SUM(CASE WHEN status >= 200 AND status < 300 THEN 1 ELSE 0 END), 0) AS ok,
        COALESCE(SUM(cost_nanos), 0) AS cost FROM usage_records WHERE user_id = ? AND created_at >= ?`,
      id,
      sinceMs
    )
    const ledger = query("SELECT COALESCE(SUM(amount_nanos), 0) AS total FROM ledger WHERE user_id = ?", id)
    const open = query(
      "SELECT (SELECT COUNT(*) FROM holds WHERE user_id = ?) + (SELECT COUNT(*) FROM leases WHERE user_id = ?) AS n",
      id,
      id
    )
    return {
      balanceNanos: big(user.balance_nanos, "users.balance_nanos"),
      ledgerNanos: big(ledger.total, "SUM(ledger.amount_nanos)"),
      records: Number(big(usage.records, "COUNT(usage_records)")),
      okRecords: Number(big(usage.ok, "usage_records with status 2xx")),
      chargedNanos: big(usage.cost, "SUM(usage_records.cost_nanos)"),
      open: Number(big(open.n, "open holds and leases"))
    }
  } finally {
    db.close()
  }
}

/** An HTTP GET returning JSON (injectable for tests). @category models */
export type GetJson = (url: string, headers: Readonly<Record<string, string>>) => Promise<unknown>

/** `fetch`-based `GetJson`; throws with the status and body start on a non-2xx answer. @category read */
export const fetchJson: GetJson = async (url, headers) => {
  const res = await fetch(url, { headers: { ...headers }, signal: AbortSignal.timeout(30_000) })
  const text = await res.text()
  if (!res.ok) throw new Error(`GET ${url}: HTTP ${res.status} ${text.slice(0, 200)}`)
  return JSON.parse(text) as unknown
}

/**
 * The balance `/api/me` reports for the key in `headers` (what the user
 * has, leases included, minus calls in progress).
 *
 * @category read
 */
export const readApiBalance = async (
  baseUrl: string,
  headers: Readonly<Record<string, string>>,
  get: GetJson = fetchJson
): Promise<bigint> => {
  const me = await get(`${baseUrl}/api/me`, headers)
  const balance = (me as { balance_usd?: unknown } | null)?.balance_usd
  if (typeof balance !== "string") throw new Error(`${baseUrl}/api/me: no "balance_usd" string in the answer`)
  return parseUsd(balance, `${baseUrl}/api/me balance_usd`)
}

/** Usage since a time, from `/api/usage/daily`. @category models */
export interface ApiUsage {
  readonly records: number
  readonly chargedNanos: bigint
}

/**
 * Sums `/api/usage/daily?from=<sinceMs>` (the key owner's records per day
 * and model, failed calls included).
 *
 * @category read
 */
export const readApiUsage = async (
  baseUrl: string,
  headers: Readonly<Record<string, string>>,
  sinceMs: number,
  get: GetJson = fetchJson
): Promise<ApiUsage> => {
  const url = `${baseUrl}/api/usage/daily?from=${Math.floor(sinceMs)}`
  const answer = await get(url, headers)
  const data = (answer as { data?: unknown } | null)?.data
  if (!Array.isArray(data)) throw new Error(`${url}: no "data" array in the answer`)
  let records = 0
  let chargedNanos = 0n
  data.forEach((row: unknown, i) => {
    const r = row as { requests?: unknown; cost?: unknown } | null
    if (typeof r?.requests !== "number" || typeof r.cost !== "string") {
      throw new Error(`${url}: data[${i}] needs "requests" (number) and "cost" (USD string)`)
    }
    records += r.requests
    chargedNanos += parseUsd(r.cost, `${url} data[${i}].cost`)
  })
  return { records, chargedNanos }
}

/** What was read, for `judgeBilling`. @category models */
export interface BillingInput {
  readonly source: "sqlite" | "api"
  /** Calls the load generator sent to the gateway. */
  readonly calls: CallCount
  readonly balanceBeforeNanos: bigint
  readonly balanceAfterNanos: bigint
  /** All usage records since the run started. */
  readonly records: number
  /** Records with a 2xx status (SQLite only; the API's daily sums do not tell). */
  readonly okRecords: number | null
  readonly chargedNanos: bigint
  /** SQLite only: the ledger's sum (must equal the balance) and open holds and leases (must be 0 after a stop). */
  readonly ledgerNanos?: bigint
  readonly open?: number
}

/** The verdict on billing. @category models */
export interface BillingCheck {
  readonly status: "verified" | "failed" | "not checked"
  readonly source: "sqlite" | "api" | null
  readonly calls: CallCount | null
  readonly records: number | null
  readonly okRecords: number | null
  readonly chargedUsd: string | null
  readonly balanceBeforeUsd: string | null
  readonly balanceAfterUsd: string | null
  /** One line: "billing verified: N usage records, X USD charged", or what is wrong. */
  readonly summary: string
  readonly problems: ReadonlyArray<string>
}

/** A check that could not be made (no gateway, no key, the database unreadable). @category verdict */
export const notChecked = (why: string): BillingCheck => ({
  status: "not checked",
  source: null,
  calls: null,
  records: null,
  okRecords: null,
  chargedUsd: null,
  balanceBeforeUsd: null,
  balanceAfterUsd: null,
  summary: `billing not checked: ${why}`,
  problems: []
})

/**
 * Judges the books against the calls:
 *
 * - successful records (SQLite) are at least the successful calls and at most
 *   those plus the calls cut off in flight (`unsure`); from the API, where
 *   failed calls are counted too, all records are at least the successful
 *   calls and at most every call sent;
 * - something was charged when something succeeded;
 * - the balance went down by exactly the records' charges (and, on SQLite,
 *   equals the ledger's sum with no lease or hold left open).
 *
 * @category verdict
 */
export const judgeBilling = (input: BillingInput): BillingCheck => {
  const { calls } = input
  const problems: Array<string> = []
  if (input.source === "sqlite") {
    const ok = input.okRecords ?? 0
    if (ok < calls.ok) {
      problems.push(
        `${ok} successful usage records for ${calls.ok} successful calls: ${calls.ok - ok} calls were not recorded`
      )
    }
    if (ok > calls.ok + calls.unsure) {
      problems.push(
        `${ok} successful usage records, more than the ${calls.ok} successful calls plus ${calls.unsure} cut off in flight`
      )
    }
  } else {
    if (input.records < calls.ok) {
      problems.push(
        `${input.records} usage records for ${calls.ok} successful calls: ${
          calls.ok - input.records
        } calls were not recorded`
      )
    }
    if (input.records > calls.sent) {
      problems.push(
        `${input.records} usage records, more than the ${calls.sent} calls sent (other traffic on this user?)`
      )
    }
  }
  if (calls.ok > 0 && input.chargedNanos <= 0n) problems.push(`nothing was charged for ${calls.ok} successful calls`)
  const drop = input.balanceBeforeNanos - input.balanceAfterNanos
  if (calls.ok > 0 && drop <= 0n) {
    problems.push(
      `the balance did not go down (${formatUsd(input.balanceBeforeNanos)} -> ${
        formatUsd(input.balanceAfterNanos)
      } USD)`
    )
  } else if (drop !== input.chargedNanos) {
    problems.push(
      `the balance went down by ${formatUsd(drop)} USD but the usage records charge ${
        formatUsd(input.chargedNanos)
      } USD`
    )
  }
  if (input.ledgerNanos !== undefined && input.ledgerNanos !== input.balanceAfterNanos) {
    problems.push(
      `the balance (${formatUsd(input.balanceAfterNanos)} USD) is not the ledger's sum (${
        formatUsd(input.ledgerNanos)
      } USD)`
    )
  }
  if (input.open !== undefined && input.open > 0) {
    problems.push(`${input.open} holds or balance leases are still open after the gateway stopped`)
  }
  const recorded = input.okRecords ?? input.records
  const summary = problems.length === 0
    ? `billing verified: ${recorded} usage records, ${
      formatUsd(input.chargedNanos)
    } USD charged (${calls.ok} successful calls${calls.unsure > 0 ? `, ${calls.unsure} cut off in flight` : ""})`
    : `billing check FAILED: ${problems.join("; ")}`
  return {
    status: problems.length === 0 ? "verified" : "failed",
    source: input.source,
    calls,
    records: input.records,
    okRecords: input.okRecords,
    chargedUsd: formatUsd(input.chargedNanos),
    balanceBeforeUsd: formatUsd(input.balanceBeforeNanos),
    balanceAfterUsd: formatUsd(input.balanceAfterNanos),
    summary,
    problems
  }
}
