/**
 * Which peers may speak for the client: reverse proxies listed by address or
 * CIDR (`trusted_proxies` in the configuration). Only a request whose socket
 * peer is one of them has its `X-Forwarded-For` (the client's address, used
 * to rate-limit sign-in per address) and `X-Forwarded-Proto` (whether the
 * session cookie gets `Secure`) believed; anyone else could write those
 * headers to dodge the limit or to forge the scheme.
 *
 * Pure: addresses are parsed here (IPv4, IPv6, IPv4-mapped IPv6), with no
 * Node import.
 *
 * @since 0.1.0
 */
import { Result } from "effect"

/** An address as a number and its family's width in bits. */
interface Address {
  readonly bits: 32 | 128
  readonly value: bigint
}

/** A network: an address and a prefix length. */
interface Network extends Address {
  readonly prefix: number
}

/**
 * A parsed list of trusted proxies.
 *
 * @category models
 */
export interface TrustedProxies {
  /** The entries as configured. */
  readonly entries: ReadonlyArray<string>
  /** Whether an address (as the socket reports it) is one of the trusted proxies. */
  readonly contains: (address: string) => boolean
}

/**
 * The default: proxies on the same machine (`127.0.0.0/8` and `::1`).
 *
 * @category constants
 */
export const loopback: ReadonlyArray<string> = ["127.0.0.0/8", "::1/128"]

const parseV4 = (text: string): bigint | undefined => {
  const parts = text.split(".")
  if (parts.length !== 4) return undefined
  let value = 0n
  for (const part of parts) {
    if (!/^\d{1,3}$/.test(part) || Number(part) > 255) return undefined
    value = (value << 8n) | BigInt(Number(part))
  }
  return value
}

const parseV6 = (text: string): bigint | undefined => {
  const halves = text.split("::")
  if (halves.length > 2) return undefined
  const groups = (half: string): Array<number> | undefined => {
    if (half === "") return []
    const out: Array<number> = []
    const pieces = half.split(":")
    for (let i = 0; i < pieces.length; i++) {
      const piece = pieces[i]!
      if (i === pieces.length - 1 && piece.includes(".")) {
        const v4 = parseV4(piece)
        if (v4 === undefined) return undefined
        out.push(Number(v4 >> 16n), Number(v4 & 0xffffn))
      } else if (/^[0-9a-f]{1,4}$/i.test(piece)) {
        out.push(Number.parseInt(piece, 16))
      } else {
        return undefined
      }
    }
    return out
  }
  const head = groups(halves[0]!)
  const tail = halves.length === 2 ? groups(halves[1]!) : []
  if (head === undefined || tail === undefined) return undefined
  const missing = 8 - head.length - tail.length
  if (halves.length === 2 ? missing < 1 : missing !== 0) return undefined
  const all = [...head, ...Array<number>(missing).fill(0), ...tail]
  return all.reduce((acc, group) => (acc << 16n) | BigInt(group), 0n)
}

/**
 * Parses an address as sockets and proxies write it: `203.0.113.9`,
 * `2001:db8::1`, `::ffff:203.0.113.9` (read as the IPv4 address), with an
 * optional zone (`fe80::1%eth0`), brackets, or port (`203.0.113.9:443`,
 * `[2001:db8::1]:443`).
 */
const parseAddress = (raw: string): Address | undefined => {
  let text = raw.trim()
  const bracketed = /^\[([^\]]+)\](?::\d+)?$/.exec(text)
  if (bracketed !== null) text = bracketed[1]!
  else if (/^[\d.]+:\d+$/.test(text)) text = text.slice(0, text.indexOf(":"))
  text = text.replace(/%.*$/, "")
  if (text.includes(":")) {
    const value = parseV6(text)
    if (value === undefined) return undefined
    return value >> 32n === 0xffffn
      ? { bits: 32, value: value & 0xffffffffn }
      : { bits: 128, value }
  }
  const value = parseV4(text)
  return value === undefined ? undefined : { bits: 32, value }
}

const parseNetwork = (entry: string): Network | undefined => {
  const [address = "", prefixText, ...rest] = entry.trim().split("/")
  if (rest.length > 0) return undefined
  const parsed = parseAddress(address)
  if (parsed === undefined) return undefined
  // An IPv4-mapped network (::ffff:10.0.0.0/104) counts its prefix over the IPv4 part.
  const mappedOffset = parsed.bits === 32 && address.includes(":") ? 96 : 0
  if (prefixText === undefined) return { ...parsed, prefix: parsed.bits }
  if (!/^\d{1,3}$/.test(prefixText)) return undefined
  const prefix = Number(prefixText) - mappedOffset
  return prefix < 0 || prefix > parsed.bits ? undefined : { ...parsed, prefix }
}

const within = (network: Network, address: Address): boolean => {
  if (network.bits !== address.bits) return false
  const shift = BigInt(network.bits - network.prefix)
  return network.value >> shift === address.value >> shift
}

/**
 * Parses a list of addresses and CIDR ranges (`10.0.0.0/8`, `192.168.1.10`,
 * `fd00::/8`), or names the first entry that is neither.
 *
 * @category constructors
 */
export const make = (entries: ReadonlyArray<string>): Result.Result<TrustedProxies, string> => {
  const networks: Array<Network> = []
  for (const entry of entries) {
    const network = parseNetwork(entry)
    if (network === undefined) {
      return Result.fail(`'${entry}' is not an IP address or a CIDR range such as 10.0.0.0/8 or fd00::/8`)
    }
    networks.push(network)
  }
  return Result.succeed({
    entries: [...entries],
    contains: (address) => {
      const parsed = parseAddress(address)
      return parsed !== undefined && networks.some((network) => within(network, parsed))
    }
  })
}

/**
 * Parses a list known to be valid (the defaults, or one already checked with
 * `make`); throws on a bad entry.
 *
 * @category constructors
 */
export const unsafeMake = (entries: ReadonlyArray<string>): TrustedProxies => {
  const result = make(entries)
  if (Result.isFailure(result)) throw new Error(`trusted proxies: ${result.failure}`)
  return result.success
}

/**
 * The client's address: the socket peer, unless the peer is a trusted proxy
 * that sent `X-Forwarded-For`; then the right-most address in that list that
 * is not itself a trusted proxy (each proxy appends the peer it saw, so the
 * entries left of the last untrusted one could have been written by the
 * client). When every entry is trusted, the left-most one.
 *
 * @category resolving
 */
export const clientAddress = (trusted: TrustedProxies, peer: string, forwardedFor: string | undefined): string => {
  if (forwardedFor === undefined || !trusted.contains(peer)) return peer
  const hops = forwardedFor.split(",").map((hop) => hop.trim()).filter((hop) => hop.length > 0)
  for (let i = hops.length - 1; i >= 0; i--) {
    if (!trusted.contains(hops[i]!)) return hops[i]!
  }
  return hops[0] ?? peer
}

/**
 * Whether the client reached the first proxy over HTTPS, as a trusted proxy
 * says in `X-Forwarded-Proto` (its first value, the outermost proxy's);
 * `undefined` when the peer is not trusted or says nothing.
 *
 * @category resolving
 */
export const forwardedHttps = (
  trusted: TrustedProxies,
  peer: string,
  forwardedProto: string | undefined
): boolean | undefined => {
  if (forwardedProto === undefined || !trusted.contains(peer)) return undefined
  const first = forwardedProto.split(",")[0]!.trim().toLowerCase()
  return first === "" ? undefined : first === "https"
}
