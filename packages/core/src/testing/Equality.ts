/**
 * Structural equality of JSON-like values (plain objects, arrays, strings,
 * numbers, booleans, `null`), as the wire sees them: the order of keys does
 * not matter, and a member whose value is `undefined` counts as absent (JSON
 * drops it). The adapters' laws compare what comes back from a round trip
 * with what went in this way, and `assertEqual` fails with both values
 * written out, which fast-check reports with the shrunk counterexample. Like
 * the rest of `@modelgate/core/testing`, it is for tests and laws, and free of
 * fast-check.
 *
 * @example
 * ```ts
 * import * as Equality from "@modelgate/core/testing/Equality"
 *
 * Equality.deepEqual({ a: [1, { b: "x" }], c: undefined }, { a: [1, { b: "x" }] }) // true
 * Equality.deepEqual({ a: [1, 2] }, { a: [2, 1] })                                 // false
 * Equality.assertEqual({ a: 1 }, { a: 2 }, "round trip")
 * // throws: round trip: the values differ
 * //           actual:   {"a":1}
 * //           expected: {"a":2}
 * ```
 *
 * @since 0.1.0
 */
import type { ChatResponse } from "../dialect/Canonical.ts"
import * as StreamAssembly from "../dialect/StreamAssembly.ts"

const definedKeys = (value: object): Array<string> => {
  const keys: Array<string> = []
  for (const key of Object.keys(value)) {
    if ((value as Record<string, unknown>)[key] !== undefined) keys.push(key)
  }
  return keys
}

/**
 * Whether two JSON-like values are structurally equal (key order ignored,
 * `undefined` members absent, `NaN` equal to itself).
 *
 * @category equality
 */
export const deepEqual = (a: unknown, b: unknown): boolean => {
  if (a === b) return true
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) {
    return typeof a === "number" && typeof b === "number" && Number.isNaN(a) && Number.isNaN(b)
  }
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], b[i])) return false
    return true
  }
  if (Array.isArray(b)) return false
  const keys = definedKeys(a)
  if (keys.length !== definedKeys(b).length) return false
  for (const key of keys) {
    if (!deepEqual((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key])) return false
  }
  return true
}

const show = (value: unknown): string =>
  JSON.stringify(value, (_key, member: unknown) => typeof member === "bigint" ? `${member}n` : member) ?? String(value)

/**
 * Throws an `Error` showing both values when they are not `deepEqual`;
 * `what` names what was compared.
 *
 * @category equality
 */
export const assertEqual = (actual: unknown, expected: unknown, what: string): void => {
  if (!deepEqual(actual, expected)) {
    throw new Error(`${what}: the values differ\n  actual:   ${show(actual)}\n  expected: ${show(expected)}`)
  }
}

/**
 * A response as assembling its events gives it back: adjacent text (and
 * unsigned thinking) parts merged.
 *
 * @category streams
 */
export const merged = (response: ChatResponse): ChatResponse =>
  StreamAssembly.assemble(StreamAssembly.toEvents(response))

/**
 * What every adapter's stream-rechunking law concludes: one answer's stream
 * cut two ways assembles alike (`one`, `two`), and equals the non-stream
 * decoding of the same answer (`whole`, its adjacent parts merged).
 *
 * @category streams
 */
export const assertRechunked = (one: ChatResponse, two: ChatResponse, whole: ChatResponse): void => {
  assertEqual(one, two, "assembled streams")
  assertEqual(one, merged(whole), "assembled stream and non-stream answer")
}
