/**
 * Fresh identifiers: request ids (`req_` and 24 hex characters: the time in
 * milliseconds, 11 of them, then 13 random ones, so ids made later sort later
 * and the stores' unique indexes on them take each new id at their end rather
 * than on a random page) and the id
 * and start time given to an upstream answer's decoder (`Dialect.AnswerStart`).
 * Random bytes come from the runtime's `crypto.getRandomValues`, taken from a
 * pool filled 4 KB at a time (one call into the random source per request
 * cost more than the rest of making the id).
 *
 * @since 0.1.0
 */
import type { Dialect } from "@modelgate/core"
import { Clock, Effect } from "effect"

const pool = new Uint8Array(4096)
let poolAt = pool.length

const hex: ReadonlyArray<string> = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"))

/** `bytes` random bytes as hex. */
const randomHex = (bytes: number): string => {
  if (poolAt + bytes > pool.length) {
    crypto.getRandomValues(pool)
    poolAt = 0
  }
  let out = ""
  for (let i = poolAt; i < poolAt + bytes; i++) out += hex[pool[i]!]!
  poolAt += bytes
  return out
}

/**
 * A new request id: `req_`, the time in milliseconds as 11 hex characters
 * and 52 random bits as 13 (24 hex characters in all, as before). Ids made
 * later sort later: a store's unique index on the request id (the usage
 * record's, the ledger charge's) then grows at its end, where a random id
 * wrote a random page of it per call (issue 22: about half the pages a call
 * wrote).
 *
 * @category ids
 */
export const requestId = (): string =>
  `req_${Date.now().toString(16).padStart(11, "0").slice(-11)}${randomHex(7).slice(1)}`

/**
 * What an upstream answer's decoder gets for what the answer may lack: a
 * random id (12 bytes, hex) and now, in epoch seconds.
 *
 * @category ids
 */
export const answerStart: Effect.Effect<Dialect.AnswerStart> = Effect.map(
  Clock.currentTimeMillis,
  (now) => ({ id: randomHex(12), created: Math.floor(now / 1000) })
)
