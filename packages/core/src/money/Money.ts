/**
 * Money in modelgate is an integer count of nano-dollars (1 USD = 10^9 nano-dollars),
 * carried as `bigint`. No float ever touches a balance: decimal amounts from
 * configuration or the API are parsed digit by digit, and every computation that
 * can produce a fraction of a nano-dollar rounds exactly once, upward (see
 * `Pricing`), so a charge is never smaller than the price says.
 *
 * @since 0.1.0
 */
import { Effect, Schema, SchemaGetter, SchemaIssue } from "effect"

/** @category models */
export type Nanos = bigint

/** Nano-dollars in one US dollar. @category constants */
export const NANOS_PER_USD = 1_000_000_000n

/** The largest amount accepted anywhere: 10^9 USD. It keeps every product in pricing far from overflow in int64 columns. @category constants */
export const MAX_NANOS = 1_000_000_000n * NANOS_PER_USD

const decimalPattern = /^([+-])?(\d+)(?:\.(\d+))?$/
const exponentPattern = /^(-)?(\d+)(?:\.(\d+))?e([+-]?\d+)$/

/**
 * The exact decimal text of a finite number, from its shortest round-trip
 * form (`String(n)`), with exponent notation expanded digit by digit:
 * `1e-12` -> `"0.000000000001"`, `65536.01` -> `"65536.01"`, `1e+21` ->
 * `"1000000000000000000000"`. This is the text a person wrote in YAML or JSON
 * whenever it fits in a double (up to 15-17 significant digits).
 *
 * @category parsing
 */
export const numberText = (input: number): string => {
  const text = String(input)
  const match = exponentPattern.exec(text)
  if (match === null) return text
  const [, sign = "", whole, fraction = "", exponentText] = match
  const digits = whole! + fraction
  // The position of the decimal point within `digits`, after applying the exponent.
  const point = whole!.length + Number(exponentText)
  const expanded = point <= 0
    ? `0.${"0".repeat(-point)}${digits}`
    : point >= digits.length
    ? digits + "0".repeat(point - digits.length)
    : `${digits.slice(0, point)}.${digits.slice(point)}`
  return sign + expanded
}

/**
 * Parses a decimal string (or a finite number, via its shortest round-trip
 * text, see `numberText`) into an integer count of `10^-scale` units. Returns
 * `undefined` when the text is not a plain decimal or needs more fractional
 * digits than `scale` allows: nothing is rounded, so `1e-12` USD and
 * `1.000000000001` USD are refused rather than read as 0 and 1, and
 * `0.1 + 0.2` (`0.30000000000000004`) is refused rather than read as 0.3.
 *
 * @category parsing
 */
export const parseScaled = (input: string | number, scale: number): bigint | undefined => {
  let text: string
  if (typeof input === "number") {
    if (!Number.isFinite(input)) return undefined
    text = numberText(input)
  } else {
    text = input.trim()
  }
  const match = decimalPattern.exec(text)
  if (match === null) return undefined
  const [, sign, whole, fraction = ""] = match
  const trimmed = fraction.replace(/0+$/, "")
  if (trimmed.length > scale) return undefined
  const units = BigInt(whole!) * 10n ** BigInt(scale) + BigInt((trimmed.padEnd(scale, "0")) || "0")
  return sign === "-" ? -units : units
}

/**
 * Parses a USD amount ("10", "0.15", 2.5) into nano-dollars; `undefined` when it
 * is not a decimal or is finer than one nano-dollar.
 *
 * @category parsing
 */
export const usdToNanos = (input: string | number): Nanos | undefined => parseScaled(input, 9)

/**
 * Formats nano-dollars as an exact decimal USD string with at least two
 * fractional digits and no trailing zeros beyond them: `10.00`, `9.99985`,
 * `-0.000000001`.
 *
 * @category formatting
 */
export const formatUsd = (nanos: Nanos): string => formatScaled(nanos, 9, 2)

/** Formats an integer count of `10^-scale` units as a decimal string. @category formatting */
export const formatScaled = (units: bigint, scale: number, minFraction = 0): string => {
  const negative = units < 0n
  const abs = negative ? -units : units
  const base = 10n ** BigInt(scale)
  const whole = abs / base
  let fraction = (abs % base).toString().padStart(scale, "0").replace(/0+$/, "")
  if (fraction.length < minFraction) fraction = fraction.padEnd(minFraction, "0")
  return `${negative ? "-" : ""}${whole}${fraction.length > 0 ? `.${fraction}` : ""}`
}

/** Integer division rounding toward positive infinity, for non-negative numerators. @category arithmetic */
export const divCeil = (numerator: bigint, denominator: bigint): bigint => {
  if (numerator <= 0n) return -((-numerator) / denominator)
  return (numerator + denominator - 1n) / denominator
}

/**
 * A USD amount as written by people (a number or a decimal string such as
 * `"12.50"`), decoded to nano-dollars and encoded back as an exact decimal string.
 *
 * @category schemas
 */
export const UsdAmount = Schema.Union([Schema.Finite, Schema.String]).pipe(
  Schema.decodeTo(Schema.BigInt, {
    decode: SchemaGetter.transformEffect((input: string | number) => {
      const nanos = usdToNanos(input)
      if (nanos === undefined) {
        return Effect.fail(
          invalid(
            `Expected a USD amount with at most 9 decimal places, like 10 or "0.15", got ${JSON.stringify(input)}`
          )
        )
      }
      if (nanos > MAX_NANOS || nanos < -MAX_NANOS) {
        return Effect.fail(invalid(`Expected a USD amount of at most 1000000000, got ${JSON.stringify(input)}`))
      }
      return Effect.succeed(nanos)
    }),
    encode: SchemaGetter.transform((nanos: bigint) => formatUsd(nanos))
  })
)

const invalid = (message: string) => new SchemaIssue.InvalidValue({ message })
