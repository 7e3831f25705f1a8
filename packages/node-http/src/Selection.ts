/**
 * Channel selection: the order in which a call tries its candidate channels.
 * Higher `priority` tiers first; within a tier, a weighted random order (a
 * channel with weight 0 is only tried after the others of its tier). Random
 * draws come from Effect's `Random`, so tests can seed them.
 *
 * @since 0.1.0
 */
import type { Domain } from "@modelgate/core"
import { Effect, Random } from "effect"

/**
 * Orders candidates (already sorted by descending priority) for one call.
 *
 * @category selection
 */
export const order = (channels: ReadonlyArray<Domain.Channel>): Effect.Effect<ReadonlyArray<Domain.Channel>> =>
  Effect.gen(function*() {
    if (channels.length <= 1) return channels
    const result: Array<Domain.Channel> = []
    let start = 0
    while (start < channels.length) {
      let end = start + 1
      while (end < channels.length && channels[end]!.priority === channels[start]!.priority) end++
      const tier = channels.slice(start, end)
      while (tier.length > 0) {
        const total = tier.reduce((sum, channel) => sum + channel.weight, 0)
        let index = 0
        if (total > 0) {
          let draw = (yield* Random.next) * total
          index = tier.findIndex((channel) => (draw -= channel.weight) < 0)
          if (index === -1) index = tier.length - 1
        }
        result.push(tier[index]!)
        tier.splice(index, 1)
      }
      start = end
    }
    return result
  })

/**
 * Picks one of a channel's upstream keys (spreading calls over them).
 *
 * @category selection
 */
export const pickKey = (channel: Domain.Channel): Effect.Effect<string> =>
  channel.apiKeys.length <= 1
    ? Effect.succeed(channel.apiKeys[0] ?? "")
    : Effect.map(Random.nextIntBetween(0, channel.apiKeys.length - 1), (i) => channel.apiKeys[i]!)
