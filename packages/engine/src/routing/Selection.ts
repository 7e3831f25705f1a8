/**
 * Channel selection: which channel and upstream key each attempt of a call
 * uses (docs/routing.md).
 *
 * - Candidates come best priority first (a larger `priority` is preferred);
 *   within a tier the order is weighted random (a channel with weight 0 is
 *   only tried after the others of its tier). Random draws come from Effect's
 *   `Random`, so tests can seed them.
 * - With a sticky value (the configured request header), the order within a
 *   tier is weighted rendezvous hashing of the value instead: the same value
 *   gets the same channel (and key) as long as it is healthy, and when it is
 *   not, only the calls that were on it move.
 * - Keys whose breaker is open and disabled keys are skipped; a channel none of
 *   whose keys can take a call is skipped. When that leaves nothing, the key
 *   whose breaker will let calls through soonest is tried anyway (a forced
 *   trial) rather than failing without trying. Disabled keys are never forced:
 *   the upstream refused them, and the prober re-enables them when they work.
 * - Within a channel, calls spread over its keys at random. A failure that
 *   is the key's own (`"key"`: refused credentials, 429) is retried with
 *   another key of the same channel; one that is the server's (`"server"`:
 *   connection, timeout, 5xx) moves to the next channel. When every channel
 *   was tried and attempts remain, the channels' other keys come next. One
 *   that is the channel's for the model (`"model"`: a 403 about what was
 *   asked) moves to the next channel and never comes back to that one.
 *
 * @since 0.1.0
 */
import type { Domain } from "@modelgate/core"
import { Effect, Random } from "effect"
import type { Availability } from "./Health.ts"

/** One attempt's channel and key. `force`: admit it although its breaker is open. @category models */
export interface Target {
  readonly channel: Domain.Channel
  readonly key: string
  readonly keyIndex: number
  readonly force: boolean
}

/** What selection needs to know of key health at the call's start. @category models */
export interface View {
  readonly availability: (channel: Domain.Channel, key: string) => Availability
  /** When an open key may take calls again. */
  readonly retryAt: (channel: Domain.Channel, key: string) => number
}

/**
 * Why the previous attempt failed: the key's own problem, the server's, or
 * the channel's for this call (its upstream refused what was asked, with a
 * 403: the channel's other keys would be refused too).
 *
 * @category models
 */
export type Failure = "key" | "server" | "model"

/** Every key is healthy. @category constructors */
export const allHealthy: View = { availability: () => "available", retryAt: () => 0 }

interface Candidate {
  readonly channel: Domain.Channel
  /** Indexes of the keys that may take a call, in the order to try them. */
  readonly keys: ReadonlyArray<number>
}

/**
 * The attempts of one call, handed out one at a time by `next`.
 *
 * @category models
 */
export class Plan {
  /** The channels to try, in order, with their usable keys. */
  readonly candidates: ReadonlyArray<Candidate>
  /** The target to force when there is no candidate at all. */
  readonly fallback: Target | undefined
  private current = -1
  private readonly used: Array<Set<number>>
  private forced = false

  constructor(candidates: ReadonlyArray<Candidate>, fallback: Target | undefined) {
    this.candidates = candidates
    this.fallback = fallback
    this.used = candidates.map(() => new Set())
  }

  /** The next attempt after a failure of kind `previous` (undefined for the first), or undefined when none is left. */
  next(previous?: Failure): Target | undefined {
    if (this.candidates.length === 0) {
      if (this.forced || this.fallback === undefined) return undefined
      this.forced = true
      return this.fallback
    }
    if (previous === "key" && this.current >= 0) {
      const other = this.take(this.current)
      if (other !== undefined) return other
    }
    if (previous === "model" && this.current >= 0) {
      const candidate = this.candidates[this.current]!
      for (const keyIndex of candidate.keys) this.used[this.current]!.add(keyIndex)
    }
    while (this.current + 1 < this.candidates.length) {
      this.current++
      const first = this.take(this.current)
      if (first !== undefined) return first
    }
    // Every channel had its turn: their other keys, in channel order.
    for (let i = 0; i < this.candidates.length; i++) {
      const other = this.take(i)
      if (other !== undefined) return other
    }
    return undefined
  }

  private take(index: number): Target | undefined {
    const candidate = this.candidates[index]!
    const used = this.used[index]!
    for (const keyIndex of candidate.keys) {
      if (used.has(keyIndex)) continue
      used.add(keyIndex)
      return { channel: candidate.channel, key: candidate.channel.apiKeys[keyIndex]!, keyIndex, force: false }
    }
    return undefined
  }
}

/**
 * A 53-bit hash of a string (two 32-bit multiply-xor lanes, each finished
 * with MurmurHash3's mixer), as a number in (0, 1).
 *
 * @category hashing
 */
export const hashUnit = (text: string): number => {
  let a = 0x811c9dc5
  let b = 0x9747b28c
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    a = Math.imul(a ^ c, 0x01000193)
    b = Math.imul(b ^ c, 0x5bd1e995)
  }
  a = mix(a ^ Math.imul(b, 0x9e3779b1))
  b = mix(b ^ a)
  const bits = (b >>> 0) * 2 ** 21 + (a >>> 11)
  return (bits + 0.5) / 2 ** 53
}

const mix = (h: number): number => {
  h ^= h >>> 16
  h = Math.imul(h, 0x85ebca6b)
  h ^= h >>> 13
  h = Math.imul(h, 0xc2b2ae35)
  return h ^ (h >>> 16)
}

/** Weighted rendezvous score: the largest wins; weight 0 always loses. */
const score = (weight: number, text: string): number =>
  weight <= 0 ? -1 + hashUnit(text) / 2 : weight / -Math.log(hashUnit(text))

/** Orders a tier by weighted random draws without replacement. */
const weightedOrder = <A>(items: Array<A>, weightOf: (a: A) => number, random: Random.Random): Array<A> => {
  const out: Array<A> = []
  const pool = items.slice()
  while (pool.length > 0) {
    const total = pool.reduce((sum, item) => sum + weightOf(item), 0)
    let index = 0
    if (total > 0) {
      let draw = random.nextDoubleUnsafe() * total
      index = pool.findIndex((item) => (draw -= weightOf(item)) < 0)
      if (index === -1) index = pool.length - 1
    } else if (pool.length > 1) {
      index = Math.floor(random.nextDoubleUnsafe() * pool.length)
    }
    out.push(pool[index]!)
    pool.splice(index, 1)
  }
  return out
}

const stickyOrder = <A>(
  items: ReadonlyArray<A>,
  weightOf: (a: A) => number,
  idOf: (a: A) => string,
  sticky: string
): Array<A> =>
  items.map((item) => ({ item, score: score(weightOf(item), `${sticky}\u0000${idOf(item)}`) }))
    .sort((x, y) => y.score - x.score)
    .map((x) => x.item)

/**
 * Plans the attempts of a call over `channels` (already sorted by descending
 * priority): skips what `view` says cannot take a call, orders the rest.
 *
 * @category selection
 */
export const plan = (
  channels: ReadonlyArray<Domain.Channel>,
  view: View,
  sticky?: string | undefined
): Effect.Effect<Plan> =>
  Effect.map(Effect.service(Random.Random), (random) => {
    const candidates: Array<Candidate> = []
    let start = 0
    while (start < channels.length) {
      let end = start + 1
      while (end < channels.length && channels[end]!.priority === channels[start]!.priority) end++
      const tier: Array<Candidate> = []
      for (let i = start; i < end; i++) {
        const channel = channels[i]!
        const usable: Array<number> = []
        for (let k = 0; k < channel.apiKeys.length; k++) {
          const state = view.availability(channel, channel.apiKeys[k]!)
          if (state === "available" || state === "trial") usable.push(k)
        }
        if (usable.length === 0) continue
        const keys = usable.length === 1
          ? usable
          : sticky === undefined
          ? weightedOrder(usable, () => 1, random)
          : stickyOrder(usable, () => 1, (k) => `${channel.id}\u0000${channel.apiKeys[k]!}`, sticky)
        tier.push({ channel, keys })
      }
      const ordered = tier.length <= 1
        ? tier
        : sticky === undefined
        ? weightedOrder(tier, (c) => c.channel.weight, random)
        : stickyOrder(tier, (c) => c.channel.weight, (c) => c.channel.id, sticky)
      for (const candidate of ordered) candidates.push(candidate)
      start = end
    }
    return new Plan(candidates, candidates.length === 0 ? soonest(channels, view) : undefined)
  })

/** The open key that may take calls again first (disabled keys excluded), as a forced target. */
const soonest = (channels: ReadonlyArray<Domain.Channel>, view: View): Target | undefined => {
  let best: Target | undefined
  let bestAt = Infinity
  for (const channel of channels) {
    for (let k = 0; k < channel.apiKeys.length; k++) {
      const key = channel.apiKeys[k]!
      if (view.availability(channel, key) !== "open") continue
      const at = view.retryAt(channel, key)
      if (at < bestAt) {
        bestAt = at
        best = { channel, key, keyIndex: k, force: true }
      }
    }
  }
  return best
}
