/**
 * The hold sweeper on PostgreSQL releases only holds older than the longest a
 * call may take: the configuration's channels and, since timeouts can be
 * edited in the console, the channels as they are now.
 */
import { assert, describe, it } from "@effect/vitest"
import { Accounts } from "@modelgate/store/Accounts"
import * as Database from "@modelgate/store/Database"
import { Effect, Layer } from "effect"
import * as Server from "../src/Server.ts"

const sweptWith = (longest: number | undefined) =>
  Effect.gen(function*() {
    const cutoffs: Array<number> = []
    const accounts = Layer.succeed(Accounts)({
      sweepHolds: (selector: { readonly olderThanMs?: number }) => Effect.sync(() => (cutoffs.push(selector.olderThanMs ?? -1), 0))
    } as unknown as Accounts["Service"])
    const layer = Server.sweeper(600_000, longest === undefined ? undefined : Effect.succeed(longest)).pipe(
      Layer.provide(Layer.mergeAll(accounts, Layer.succeed(Database.Dialect)("pg")))
    )
    yield* Effect.scoped(Layer.build(layer))
    return cutoffs
  })

describe("hold sweeper", () => {
  it.effect("uses the longest total_ms of the channels as they are now, plus a minute", () =>
    Effect.gen(function*() {
      assert.deepStrictEqual(yield* sweptWith(undefined), [660_000])
      assert.deepStrictEqual(yield* sweptWith(1_800_000), [1_860_000], "a console channel with a longer total_ms")
      assert.deepStrictEqual(yield* sweptWith(60_000), [660_000], "never below the configuration's longest")
    }))
})
