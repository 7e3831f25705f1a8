/**
 * The engine's stream relay on Node, with an in-memory upstream body under
 * the Undici transport's body adapter: frames through the transform, the
 * socket's backpressure reaching the upstream, error frames for a failed body
 * or transform, and exactly one end report however the relay ends (complete,
 * failed, or destroyed by a client that went away).
 */
import { assert, describe, it } from "@effect/vitest"
import { GatewayError } from "@modelgate/core"
import { Relay, type RelayEnd, type RelayOptions } from "@modelgate/engine/wire/Relay"
import { PassThrough, type Readable } from "node:stream"
import { NodeRelay } from "../src/NodeRelay.ts"
import { bodyOf } from "../src/UndiciTransport.ts"

const encoder = new TextEncoder()

/** A relay of `body` whose transform upper-cases its text, ending with `[END]`; `ends` collects its end reports. */
const relayOf = (body: Readable, over: Partial<RelayOptions> = {}) => {
  const ends: Array<RelayEnd> = []
  // The transform decodes (a character split between chunks included), as a translated stream's does.
  const decoder = new TextDecoder()
  const relay = new NodeRelay(
    new Relay({
      first: encoder.encode("a"),
      body: bodyOf(body as never, { firstByte: Date.now() + 60_000, total: Date.now() + 60_000 }),
      push: (chunk) => decoder.decode(chunk, { stream: true }).toUpperCase(),
      end: () => "[END]",
      bodyError: () => new GatewayError.UpstreamTimeout({ message: "the upstream stalled" }),
      errorFrame: (error) => `[ERROR ${error._tag}: ${error.message}]`,
      onEnd: (end) => ends.push(end),
      ...over
    })
  )
  return { relay, ends }
}

/** Everything the relay gives until it ends. */
const readAll = async (relay: NodeRelay): Promise<string> => {
  const chunks: Array<Buffer> = []
  for await (const chunk of relay) chunks.push(Buffer.from(chunk as Uint8Array))
  return Buffer.concat(chunks).toString("utf8")
}

const tick = () => new Promise((resolve) => setImmediate(resolve))

describe("Relay", () => {
  it("relays the first chunk and the rest through the transform, ends with the last frames, and reports Complete once", async () => {
    const body = new PassThrough()
    const { relay, ends } = relayOf(body)
    body.write("b")
    // A character split across chunks is decoded whole.
    const euro = encoder.encode("€")
    body.write(euro.subarray(0, 1))
    body.end(euro.subarray(1))
    assert.strictEqual(await readAll(relay), "AB€[END]")
    await tick()
    assert.deepStrictEqual(ends, [{ _tag: "Complete" }])
    assert.isTrue(relay.destroyed, "the relay closes itself after its end")
  })

  it("stops reading the upstream while the reader does not read, and reads on when it does", async () => {
    const body = new PassThrough({ highWaterMark: 16 * 1024 })
    const kb = Buffer.alloc(1024, 98)
    let written = 0
    const total = 4 * 1024 * 1024
    const pump = () => {
      while (written < total) {
        written += kb.length
        if (!body.write(kb)) return
      }
      body.end()
    }
    body.on("drain", pump)
    const { relay, ends } = relayOf(body)
    pump()
    for (let i = 0; i < 20; i++) await tick()
    // Held back: the relay's buffer (64 KiB) and the body's own, nowhere near the 4 MiB the upstream has.
    assert.isTrue(body.isPaused())
    assert.isAtMost(written, 256 * 1024)
    const text = await readAll(relay)
    assert.strictEqual(text.length, 1 + total + "[END]".length)
    assert.deepStrictEqual(ends, [{ _tag: "Complete" }])
  })

  it("a body that fails ends the answer with the error frame, reports Failed, and is closed", async () => {
    const body = new PassThrough()
    const { relay, ends } = relayOf(body)
    body.write("b")
    await tick()
    body.destroy(new Error("socket hang up"))
    assert.strictEqual(await readAll(relay), "AB[ERROR UpstreamTimeout: the upstream stalled]")
    assert.strictEqual(ends.length, 1)
    assert.strictEqual(ends[0]!._tag, "Failed")
    assert.isTrue(body.destroyed)
  })

  it("frames given as bytes go out as they came, a character split between chunks included", async () => {
    const body = new PassThrough()
    const { relay, ends } = relayOf(body, { push: (chunk) => chunk, end: () => new Uint8Array(0) })
    const euro = encoder.encode("€")
    body.write(euro.subarray(0, 2))
    body.end(euro.subarray(2))
    assert.strictEqual(await readAll(relay), "a€")
    await tick()
    assert.deepStrictEqual(ends, [{ _tag: "Complete" }])
  })

  it("a transform that throws a gateway error ends with its error frame; anything else is an unreadable answer", async () => {
    const body = new PassThrough()
    const refused = relayOf(body, {
      push: (chunk) => {
        if (new TextDecoder().decode(chunk) === "a") return "A"
        throw new GatewayError.UpstreamUnavailable({ message: "the upstream sent an error event" })
      }
    })
    body.write("b")
    assert.strictEqual(await readAll(refused.relay), "A[ERROR UpstreamUnavailable: the upstream sent an error event]")
    assert.deepStrictEqual(refused.ends.map((end) => end._tag), ["Failed"])
    assert.isTrue(body.destroyed)

    const broken = relayOf(new PassThrough(), {
      push: () => {
        throw new SyntaxError("Unexpected token")
      }
    })
    assert.strictEqual(
      await readAll(broken.relay),
      "[ERROR UpstreamUnavailable: The upstream's answer could not be read.]"
    )
    assert.deepStrictEqual(broken.ends.map((end) => end._tag), ["Failed"])
  })

  it("last frames that cannot be made end with an error frame instead", async () => {
    const body = new PassThrough()
    const { relay, ends } = relayOf(body, {
      end: () => {
        throw new GatewayError.UpstreamUnavailable({ message: "the stream ended in the middle of an event" })
      }
    })
    body.end("b")
    assert.strictEqual(
      await readAll(relay),
      "AB[ERROR UpstreamUnavailable: the stream ended in the middle of an event]"
    )
    assert.deepStrictEqual(ends.map((end) => end._tag), ["Failed"])
  })

  it("destroyed by a client that went away: the body is closed, Closed is reported once, and a late body error goes nowhere", async () => {
    const body = new PassThrough()
    const { relay, ends } = relayOf(body)
    body.write("b")
    relay.destroy()
    await tick()
    assert.isTrue(body.destroyed)
    assert.deepStrictEqual(ends, [{ _tag: "Closed" }])
    // The body is destroyed with an error after the relay let go of it: nothing is thrown, nothing reported.
    body.emit("error", new Error("late"))
    await tick()
    assert.deepStrictEqual(ends, [{ _tag: "Closed" }])
  })
})
