/**
 * The relay's bound on one upstream event (`EventBound`: LF, CRLF and CR line
 * ends, split anywhere between chunks; one event may be at most
 * `max_event_bytes`) and its opening: primed through the transform before the
 * call commits (a failure there is the attempt's, never in-band), relayed
 * whole when the body had already ended, and an event that grows too large
 * after the first byte ends the answer in-band.
 */
import { assert, describe, it } from "@effect/vitest"
import { GatewayError } from "@modelgate/core"
import { Effect } from "effect"
import { EventBound, Relay, type RelayEnd, type RelayOptions } from "../src/wire/Relay.ts"
import type { BodySink, ResponseBody } from "../src/wire/Transport.ts"

const bytes = (text: string) => new TextEncoder().encode(text)

/** Feeds `chunks` to a bound of `max` bytes; the index of the first chunk it refused, or -1. */
const refusedAt = (max: number, chunks: ReadonlyArray<string>): number => {
  const bound = new EventBound(max)
  return chunks.findIndex((chunk) => !bound.take(bytes(chunk)))
}

describe("EventBound", () => {
  it("lets any number of events of up to max bytes through, whatever the line ends and however they are split", () => {
    const event = "data: " + "x".repeat(20) + "\n\n" // 28 bytes
    assert.strictEqual(refusedAt(28, Array.from({ length: 1000 }, () => event)), -1)
    assert.strictEqual(
      refusedAt(30, ["data: 1\r\n\r\ndata: 2\r", "\n\r\ndata: 3\r\r", "data: 4\n", "\ndata: 5\r\n", "\r\n"]),
      -1
    )
    // One byte at a time: every split point, a CRLF between two chunks included.
    const crlf = "data: " + "y".repeat(20) + "\r\n\r\n"
    assert.strictEqual(refusedAt(crlf.length, [...crlf.repeat(50)]), -1)
  })

  it("refuses a line that never ends once it passes max, in whichever chunk that happens", () => {
    assert.strictEqual(
      refusedAt(64 * 1024, [
        "data: {\"ok\":1}\n\n",
        "data: ",
        ...Array.from({ length: 10 }, () => "z".repeat(16 * 1024))
      ]),
      5
    )
  })

  it("counts an event's every line: many short lines without a blank one are one long event", () => {
    const lines = Array.from({ length: 100 }, () => "data: " + "w".repeat(94) + "\n") // 100 bytes each
    assert.strictEqual(refusedAt(1_000, lines), 9)
    assert.strictEqual(
      refusedAt(1_000, lines.map((line, i) => (i % 5 === 4 ? `${line}\n` : line))),
      -1,
      "a blank line every 5 lines ends each event in time"
    )
  })

  it("refuses an event larger than max even inside one chunk", () => {
    assert.strictEqual(refusedAt(100, [`data: ${"v".repeat(200)}\n\ndata: 1\n\n`]), 0)
  })
})

/** A body whose rest is `rest` (delivered when the relay resumes), ended after it. */
const bodyOf = (rest: ReadonlyArray<string>): ResponseBody & { discarded: boolean; flowed: boolean } => {
  const body = {
    discarded: false,
    flowed: false,
    text: () => Effect.die("not used"),
    prefix: () => Effect.succeed(""),
    next: Effect.succeed(undefined),
    flow: (sink: BodySink) => {
      body.flowed = true
      let done = false
      return {
        resume: () => {
          if (done) return
          done = true
          for (const chunk of rest) sink.chunk(bytes(chunk))
          sink.end()
        },
        pause: () => {},
        cancel: () => {
          done = true
        }
      }
    },
    discard: () => {
      body.discarded = true
    }
  }
  return body
}

const relayOf = (first: string, rest: ReadonlyArray<string>, over: Partial<RelayOptions> = {}) => {
  const decoder = new TextDecoder()
  const ends: Array<RelayEnd> = []
  const body = bodyOf(rest)
  const relay = new Relay({
    first: bytes(first),
    body,
    push: (chunk) => decoder.decode(chunk, { stream: true }).toUpperCase(),
    end: () => "[END]",
    bodyError: () => new GatewayError.UpstreamTimeout({ message: "stalled" }),
    errorFrame: (error) => `[ERROR ${error.message}]`,
    onEnd: (end) => ends.push(end),
    ...over
  })
  let written = ""
  const start = () =>
    relay.start({
      write: (frames) => (written += typeof frames === "string" ? frames : new TextDecoder().decode(frames), true),
      close: () => (written += "|")
    })
  return { relay, ends, body, start, written: () => written }
}

describe("Relay", () => {
  it("prime transforms the opening before the call commits; a failure there is returned, nothing written or reported", () => {
    const refused = relayOf("data: {broken\n\n", [], {
      push: () => {
        throw new GatewayError.UpstreamUnavailable({
          message: "The upstream sent a stream event the gateway cannot read."
        })
      }
    })
    const error = refused.relay.prime()
    assert.strictEqual(error?.message, "The upstream sent a stream event the gateway cannot read.")
    assert.deepStrictEqual(refused.ends, [])

    const tooLong = relayOf("data: " + "x".repeat(100), [], { maxEventBytes: 50 })
    assert.match(tooLong.relay.prime()?.message ?? "", /larger than 50 bytes/)

    const fine = relayOf("data: a\n\n", ["data: b\n\n"])
    assert.isUndefined(fine.relay.prime())
    fine.start()
    assert.strictEqual(fine.written(), "DATA: A\n\nDATA: B\n\n[END]|")
    assert.deepStrictEqual(fine.ends, [{ _tag: "Complete" }])
  })

  it("an opening with which the body ended is relayed and completed without reading on", () => {
    const whole = relayOf("data: a\n\n", ["never read"], { ended: true })
    assert.isUndefined(whole.relay.prime())
    whole.start()
    assert.strictEqual(whole.written(), "DATA: A\n\n[END]|")
    assert.isFalse(whole.body.flowed)
    assert.deepStrictEqual(whole.ends, [{ _tag: "Complete" }])
  })

  it("an event that grows past max_event_bytes after the first byte ends the answer in-band: what came before is delivered", () => {
    const { relay, ends, start, written } = relayOf("data: a\n\n", ["data: b\n\n", "data: " + "c".repeat(100)], {
      maxEventBytes: 64,
      eventTooLarge: () => new GatewayError.UpstreamUnavailable({ message: "event too large" })
    })
    assert.isUndefined(relay.prime())
    start()
    assert.strictEqual(written(), "DATA: A\n\nDATA: B\n\n[ERROR event too large]|")
    assert.deepStrictEqual(ends.map((end) => end._tag), ["Failed"])
  })
})
