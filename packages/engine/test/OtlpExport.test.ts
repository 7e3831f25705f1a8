/**
 * The export's batch processor (`OtlpExport.batcher`): a full batch goes out
 * at once, and what arrives while it is being sent waits for its own full
 * batch or the timer, so a fast collector is not sent a trickle of tiny
 * batches (which cost a request each: the bench once saw one request per
 * four calls); a flush sends everything.
 */
import { assert, describe, it } from "@effect/vitest"
import { Deferred, Effect } from "effect"
import * as OtlpExport from "../src/telemetry/OtlpExport.ts"

describe("OtlpExport.batcher", () => {
  it.live("sends full batches as they fill, and leaves what came during a send for the next batch", () =>
    Effect.gen(function*() {
      const sent: Array<ReadonlyArray<number>> = []
      const gate = yield* Deferred.make<void>()
      const batcher = yield* OtlpExport.batcher<number>({
        maxQueueSize: 100,
        maxExportBatchSize: 4,
        scheduleDelayMs: 60_000,
        exportTimeoutMs: 10_000,
        metrics: new OtlpExport.ExportMetrics("spans"),
        send: (batch) =>
          Effect.as(
            Effect.andThen(Effect.sync(() => sent.push(batch)), Deferred.await(gate)),
            { _tag: "Accepted", rejected: 0 } as const
          )
      })
      for (let i = 1; i <= 4; i++) batcher.push(i)
      // The full batch is being sent (held at the gate); two more arrive meanwhile.
      while (sent.length === 0) yield* Effect.sleep("1 millis")
      batcher.push(5)
      batcher.push(6)
      yield* Deferred.succeed(gate, undefined)
      yield* Effect.sleep("30 millis")
      assert.deepStrictEqual(sent, [[1, 2, 3, 4]])
      assert.strictEqual(batcher.queued(), 2, "a part batch waits for the timer or more spans")
      batcher.push(7)
      batcher.push(8)
      while (sent.length === 1) yield* Effect.sleep("1 millis")
      batcher.push(9)
      yield* batcher.flush
      assert.deepStrictEqual(sent, [[1, 2, 3, 4], [5, 6, 7, 8], [9]])
    }))
})
