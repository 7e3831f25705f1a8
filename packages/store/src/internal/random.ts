/**
 * Unbiased random base62 strings and prefixed record ids.
 *
 * @since 0.1.0
 */
const ALPHABET = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"

/**
 * `length` base62 characters from `crypto.getRandomValues`, by rejection
 * sampling: bytes >= 248 (the largest multiple of 62 that fits a byte) are
 * dropped, so every character is equally likely.
 */
export const base62 = (length: number): string => {
  let out = ""
  const buffer = new Uint8Array(Math.max(16, Math.ceil(length * 1.1)))
  while (out.length < length) {
    crypto.getRandomValues(buffer)
    for (let i = 0; i < buffer.length && out.length < length; i++) {
      const byte = buffer[i]!
      if (byte < 248) out += ALPHABET[byte % 62]
    }
  }
  return out
}

/** Base62 characters carrying as much entropy as `bytes` random bytes. */
export const base62LengthFor = (bytes: number): number => Math.ceil((bytes * 8) / Math.log2(62))

/**
 * Random bytes for record ids, drawn from `crypto.getRandomValues` a pool at a
 * time: ids are made on every call (usage records, ledger entries), and one
 * call into the random source per id cost more than the rest of making it.
 * Secrets (`base62` above) never come from the pool.
 */
const pool = new Uint8Array(4096)
let poolAt = pool.length

const poolChar = (): string => {
  for (;;) {
    if (poolAt === pool.length) {
      crypto.getRandomValues(pool)
      poolAt = 0
    }
    const byte = pool[poolAt++]!
    if (byte < 248) return ALPHABET[byte % 62]!
  }
}

/**
 * A new record id that sorts by time: the prefix, an underscore, the time in
 * milliseconds as 8 base62 characters (the alphabet is in ASCII order, so
 * the text sorts as the number) and 12 random ones (~71 bits): 20 characters,
 * like `newId`'s. For the rows written on every call (usage records, ledger
 * entries), so their primary-key index grows at its end instead of taking a
 * random page per row.
 */
export const newSortableId = (prefix: string, now: number = Date.now()): string =>
  `${prefix}_${timeChars(Math.max(0, Math.floor(now)))}${randomChars(12)}`

// Two ids per call (the usage record's, the ledger charge's): built of a few strings, not 20 one-character ones.
let lastTime = -1
let lastTimeChars = ""

/** The time as 8 base62 characters, kept for the millisecond. */
const timeChars = (time: number): string => {
  if (time === lastTime) return lastTimeChars
  let chars = ""
  for (let rest = time, i = 0; i < 8; i++, rest = Math.floor(rest / 62)) chars = ALPHABET[rest % 62]! + chars
  lastTime = time
  lastTimeChars = chars
  return chars
}

let charPool = ""
let charPoolAt = 0

/** `length` random base62 characters, cut from a string of 1,020 made at a time. */
const randomChars = (length: number): string => {
  if (charPoolAt + length > charPool.length) {
    const codes = new Array<number>(1020)
    for (let i = 0; i < codes.length; i++) codes[i] = poolChar().charCodeAt(0)
    charPool = String.fromCharCode(...codes)
    charPoolAt = 0
  }
  const chars = charPool.slice(charPoolAt, charPoolAt + length)
  charPoolAt += length
  return chars
}

/** A new record id such as `usr_3kT9...`: the prefix, an underscore and 20 base62 characters (~119 bits). */
export const newId = (prefix: string): string => {
  let id = `${prefix}_`
  for (let i = 0; i < 20; i++) id += poolChar()
  return id
}
