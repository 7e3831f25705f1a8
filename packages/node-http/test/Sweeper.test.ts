/**
 * The sweeper of holds and balance leases left by processes that died: at
 * start a node writes its heartbeat and releases what an earlier run under its
 * id left (on SQLite, where only one process uses the database, everything
 * left open); then every few seconds it writes its heartbeat again and
 * releases the holds and leases of nodes whose heartbeat stopped.
 */
import { assert, describe, it } from "@effect/vitest"
import { Accounts, type SweepSelector } from "@modelgate/store/Accounts"
import * as Database from "@modelgate/store/Database"
import { UsageWriter } from "@modelgate/store/UsageWriter"
import { Effect, Layer } from "effect"
import { TestClock } from "effect/testing"
import * as Server from "../src/Server.ts"

/** Builds node-1's sweeper on `dialect` over an Accounts that records its heartbeats and sweeps in `calls`. */
const startSweeper = (dialect: Database.Dialect["Service"], calls: Array<string>) => {
  const accounts = Layer.succeed(Accounts)(
    {
      heartbeat: (nodeId: string) => Effect.sync(() => void calls.push(`heartbeat ${nodeId}`)),
      sweepHolds: (selector: SweepSelector) => Effect.sync(() => (calls.push(`sweep ${JSON.stringify(selector)}`), 0))
    } as unknown as Accounts["Service"]
  )
  // The sweeper only waits for the writer to be built (it writes an earlier run's journal first).
  const writer = Layer.succeed(UsageWriter)({} as UsageWriter["Service"])
  return Layer.build(
    Server.sweeper("node-1").pipe(
      Layer.provide(Layer.mergeAll(accounts, writer, Layer.succeed(Database.Dialect)(dialect)))
    )
  )
}

describe("sweeper", () => {
  it.effect("at start on SQLite: heartbeat, this node's leftovers, then every other node's", () =>
    Effect.gen(function*() {
      const calls: Array<string> = []
      yield* Effect.scoped(Effect.gen(function*() {
        yield* startSweeper("sqlite", calls)
        assert.deepStrictEqual(calls, [
          "heartbeat node-1",
          `sweep {"nodeId":"node-1"}`,
          `sweep {"deadAfterMs":0,"except":"node-1"}`
        ])
        calls.length = 0
        yield* TestClock.adjust(Server.HEARTBEAT_INTERVAL_MS)
        assert.deepStrictEqual(calls, [
          "heartbeat node-1",
          `sweep {"deadAfterMs":${Server.DEAD_NODE_AFTER_MS},"except":"node-1"}`
        ])
      }))
    }))

  it.effect("on PostgreSQL other nodes may be mid-call: only this node's leftovers at start, dead nodes' on every tick", () =>
    Effect.gen(function*() {
      const calls: Array<string> = []
      yield* Effect.scoped(Effect.gen(function*() {
        yield* startSweeper("pg", calls)
        assert.deepStrictEqual(calls, ["heartbeat node-1", `sweep {"nodeId":"node-1"}`])
        calls.length = 0
        yield* TestClock.adjust(Server.HEARTBEAT_INTERVAL_MS)
        yield* TestClock.adjust(Server.HEARTBEAT_INTERVAL_MS)
        assert.deepStrictEqual(calls, [
          "heartbeat node-1",
          `sweep {"deadAfterMs":${Server.DEAD_NODE_AFTER_MS},"except":"node-1"}`,
          "heartbeat node-1",
          `sweep {"deadAfterMs":${Server.DEAD_NODE_AFTER_MS},"except":"node-1"}`
        ])
      }))
    }))
})
