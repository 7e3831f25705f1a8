/**
 * Fresh identifiers: request ids (`req_` and 24 hex characters) and the id
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
 * A new request id: `req_` and 12 random bytes as hex.
 *
 * @category ids
 */
export const requestId = (): string => `req_${randomHex(12)}`

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
