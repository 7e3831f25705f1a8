/**
 * Structural equality for JSON-like values (plain objects, arrays, primitives),
 * with a readable failure for the laws.
 *
 * @since 0.1.0
 */

/** Whether two JSON-like values are structurally equal (key order ignored, `undefined` keys significant). */
export const deepEqual = (a: unknown, b: unknown): boolean => {
  if (Object.is(a, b)) return true
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null) return false
  if (Array.isArray(a) !== Array.isArray(b)) return false
  if (Array.isArray(a)) {
    const other = b as ReadonlyArray<unknown>
    if (a.length !== other.length) return false
    for (let i = 0; i < a.length; i++) if (!deepEqual(a[i], other[i])) return false
    return true
  }
  const ka = Object.keys(a)
  const kb = Object.keys(b)
  if (ka.length !== kb.length) return false
  for (const key of ka) {
    if (!Object.hasOwn(b, key)) return false
    if (!deepEqual((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key])) return false
  }
  return true
}

/** Throws an `Error` showing both values when they differ. */
export const assertEqual = (actual: unknown, expected: unknown, what: string): void => {
  if (!deepEqual(actual, expected)) {
    throw new Error(`${what}\n  actual:   ${JSON.stringify(actual)}\n  expected: ${JSON.stringify(expected)}`)
  }
}
