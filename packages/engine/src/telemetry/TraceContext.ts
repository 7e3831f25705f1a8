/**
 * W3C Trace Context (https://www.w3.org/TR/trace-context/): reading the
 * `traceparent` and `tracestate` headers of an incoming call, and writing
 * them for an outgoing one.
 *
 * A malformed `traceparent` is ignored, as the specification says (the call
 * starts a trace of its own), and so is its `tracestate`; a malformed
 * `tracestate` alone is dropped and the `traceparent` kept. A `tracestate`
 * is passed on as it came (this gateway adds no entry of its own).
 *
 * Pure string work: no Node built-ins, no allocation beyond the result.
 *
 * @since 0.1.0
 */

/** A caller's trace context, from valid headers. @category models */
export interface Remote {
  readonly traceId: string
  /** The caller's span: the parent of the call's server span. */
  readonly spanId: string
  /** The caller's sampling decision (flag `01`). */
  readonly sampled: boolean
  /** The caller's `tracestate`, when valid, normalised (members joined by `,`). */
  readonly traceState: string | undefined
}

const isLowerHex = (value: string, from: number, to: number): boolean => {
  for (let i = from; i < to; i++) {
    const c = value.charCodeAt(i)
    if (!((c >= 48 && c <= 57) || (c >= 97 && c <= 102))) return false
  }
  return true
}

const hexByte = (value: string, at: number): number => parseInt(value.slice(at, at + 2), 16)

/**
 * Parses a `traceparent` header: `version-traceid-parentid-flags`, lower-case
 * hex. Version `00` must be exactly 55 characters; a later version (not `ff`)
 * is read for its first four fields when what follows them starts with `-`.
 * An all-zero trace or parent id is invalid. Undefined when absent or invalid.
 *
 * @category parsing
 */
export const parseTraceparent = (header: string | undefined): Omit<Remote, "traceState"> | undefined => {
  if (header === undefined) return undefined
  const value = header.trim()
  if (value.length < 55) return undefined
  if (!isLowerHex(value, 0, 2) || value.charCodeAt(2) !== 45) return undefined
  const version = value.slice(0, 2)
  if (version === "ff") return undefined
  if (version === "00" ? value.length !== 55 : value.length > 55 && value.charCodeAt(55) !== 45) return undefined
  if (value.charCodeAt(35) !== 45 || value.charCodeAt(52) !== 45) return undefined
  if (!isLowerHex(value, 3, 35) || isAllZero(value, 3, 35)) return undefined
  if (!isLowerHex(value, 36, 52) || isAllZero(value, 36, 52)) return undefined
  if (!isLowerHex(value, 53, 55)) return undefined
  return {
    traceId: value.slice(3, 35),
    spanId: value.slice(36, 52),
    sampled: (hexByte(value, 53) & 1) === 1
  }
}

const isAllZero = (value: string, from: number, to: number): boolean => {
  for (let i = from; i < to; i++) if (value.charCodeAt(i) !== 48) return false
  return true
}

/** The most list members a `tracestate` may have. @category constants */
export const MAX_TRACESTATE_MEMBERS = 32

const simpleKey = /^[a-z][a-z0-9_\-*/]{0,255}$/
const multiTenantKey = /^[a-z0-9][a-z0-9_\-*/]{0,240}@[a-z][a-z0-9_\-*/]{0,13}$/
// Printable ASCII but `,` and `=`; spaces inside, not at the end.
const memberValue = /^[\x20-\x2b\x2d-\x3c\x3e-\x7e]{0,255}[\x21-\x2b\x2d-\x3c\x3e-\x7e]$/

/**
 * Parses a `tracestate` header (several headers arrive joined by `,`): at
 * most 32 `key=value` members, keys unique, each key and value as the
 * specification's grammar says; empty members are skipped. Undefined when
 * absent, empty or invalid (the whole header is then dropped).
 *
 * @category parsing
 */
export const parseTracestate = (header: string | undefined): string | undefined => {
  if (header === undefined) return undefined
  const members: Array<string> = []
  const keys = new Set<string>()
  for (const raw of header.split(",")) {
    const member = raw.trim()
    if (member === "") continue
    const eq = member.indexOf("=")
    if (eq <= 0) return undefined
    const key = member.slice(0, eq)
    const value = member.slice(eq + 1)
    if (!(simpleKey.test(key) || multiTenantKey.test(key)) || !memberValue.test(value)) return undefined
    if (keys.has(key)) return undefined
    keys.add(key)
    members.push(member)
    if (members.length > MAX_TRACESTATE_MEMBERS) return undefined
  }
  return members.length === 0 ? undefined : members.join(",")
}

const first = (value: string | ReadonlyArray<string> | undefined): string | undefined =>
  typeof value === "string" ? value : value === undefined || value.length !== 1 ? undefined : value[0]

/**
 * A caller's trace context from its request headers (lower-case names), or
 * undefined when it sent none or an invalid `traceparent`. Two `traceparent`
 * headers are invalid (Node joins them into one value that does not parse).
 *
 * @category parsing
 */
export const fromHeaders = (
  headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
): Remote | undefined => {
  const parent = parseTraceparent(first(headers["traceparent"]))
  if (parent === undefined) return undefined
  const state = headers["tracestate"]
  return {
    ...parent,
    traceState: parseTracestate(typeof state === "string" ? state : state === undefined ? undefined : state.join(","))
  }
}

/**
 * A `traceparent` header (version `00`) naming `spanId` of `traceId`, with
 * the sampled flag.
 *
 * @category formatting
 */
export const formatTraceparent = (traceId: string, spanId: string, sampled: boolean): string =>
  `00-${traceId}-${spanId}-${sampled ? "01" : "00"}`
