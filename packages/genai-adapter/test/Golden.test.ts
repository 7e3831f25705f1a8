/**
 * Golden files: fixed inputs in test/golden/*.input.* and the exact expected
 * outputs beside them (*.expected.*). Regenerate after an intended change with
 * `UPDATE_GOLDEN=1 npx vitest run --project genai-adapter`, then review the diff.
 */
import { assert, describe, it } from "@effect/vitest"
import type { Canonical } from "@modelgate/core"
import { Framing, Request, Response, Stream as GeminiStream } from "@modelgate/genai-adapter"
import { Effect, Stream } from "effect"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"

const dir = join(import.meta.dirname, "golden")
const update = process.env.UPDATE_GOLDEN === "1"

const input = (name: string): any => JSON.parse(readFileSync(join(dir, name), "utf8"))

const golden = (name: string, actual: string) => {
  const file = join(dir, name)
  if (update || !existsSync(file)) {
    if (!update) assert.fail(`missing golden file ${name}; run with UPDATE_GOLDEN=1 and review it`)
    writeFileSync(file, actual)
    return
  }
  assert.strictEqual(actual, readFileSync(file, "utf8"))
}

const json = (value: unknown) => JSON.stringify(value, null, 2) + "\n"

describe("golden", () => {
  it.effect("gemini-cli request -> canonical", () =>
    Effect.gen(function*() {
      const { body, model, stream } = input("request-gemini-cli.input.json")
      golden("request-gemini-cli.expected.json", json(yield* Request.decodeRequest(body, model, { stream })))
    }))

  it.effect("snake_case curl-style request -> canonical", () =>
    Effect.gen(function*() {
      const { body, model, stream } = input("request-snake-case.input.json")
      golden("request-snake-case.expected.json", json(yield* Request.decodeRequest(body, model, { stream })))
    }))

  it.effect("canonical (from an OpenAI client) -> Gemini upstream request", () =>
    Effect.gen(function*() {
      const request: Canonical.ChatRequest = input("canonical-to-gemini-request.input.json")
      golden("canonical-to-gemini-request.expected.json", json(yield* Request.encodeRequest(request)))
    }))

  it.effect("Gemini upstream response -> canonical", () =>
    Effect.gen(function*() {
      const body = input("response-gemini-to-canonical.input.json")
      golden(
        "response-gemini-to-canonical.expected.json",
        json(yield* Response.decodeResponse(body, { created: 1700000000 }))
      )
    }))

  it("canonical response -> Gemini client", () => {
    const { modelVersion, response } = input("response-canonical-to-gemini.input.json")
    golden("response-canonical-to-gemini.expected.json", json(Response.encodeResponse(response, modelVersion)))
  })

  it.effect("Gemini upstream SSE -> canonical events", () =>
    Effect.gen(function*() {
      const text = readFileSync(join(dir, "stream-gemini-to-events.input.sse"), "utf8")
      const pieces = [text.slice(0, 37), text.slice(37, 300), text.slice(300)]
      const events = yield* Stream.fromIterable(pieces).pipe(
        GeminiStream.decodeSseText({ created: 1 }),
        Stream.runCollect
      )
      golden("stream-gemini-to-events.expected.json", json(events))
    }))

  it.effect("canonical events -> Gemini SSE bytes and JSON array bytes", () =>
    Effect.gen(function*() {
      const { events, modelVersion } = input("stream-events-to-gemini.input.json")
      const chunks = Stream.fromIterable(events as Array<Canonical.StreamEvent>).pipe(
        GeminiStream.encodeStream(modelVersion)
      )
      const sse = (yield* chunks.pipe(Framing.encodeSse, Stream.runCollect)).join("")
      const array = (yield* chunks.pipe(Framing.encodeArray, Stream.runCollect)).join("")
      golden("stream-events-to-gemini.expected.sse", sse)
      golden("stream-events-to-gemini.expected.array.json", array)
    }))
})
