/**
 * Golden files: fixed inputs in test/golden/*.input.* and the exact expected
 * outputs beside them (*.expected.*). Regenerate after an intended change with
 * `UPDATE_GOLDEN=1 npx vitest run --project anthropic-adapter`, then review the diff.
 */
import { assert, describe, it } from "@effect/vitest"
import { Request, Response, Stream as AnthropicStream } from "@modelgate/anthropic-adapter"
import type { Canonical } from "@modelgate/core"
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
  it.effect("canonical (from an OpenAI client: system, images, tools, tool results) -> Anthropic upstream request", () =>
    Effect.gen(function*() {
      const { request, upstreamModel } = input("request-canonical-to-anthropic.input.json")
      golden("request-canonical-to-anthropic.expected.json", json(yield* Request.encodeRequest(request, upstreamModel)))
    }))

  it.effect("Anthropic client request (thinking, tool loop, document) -> canonical", () =>
    Effect.gen(function*() {
      golden(
        "request-anthropic-to-canonical.expected.json",
        json(yield* Request.decodeRequest(input("request-anthropic-to-canonical.input.json")))
      )
    }))

  it.effect("Claude Code's request (system blocks, a system turn, adaptive thinking, a tool loop, deferred tools) -> canonical", () =>
    Effect.gen(function*() {
      golden(
        "request-claude-code.expected.json",
        json(yield* Request.decodeRequest(input("request-claude-code.input.json")))
      )
    }))

  it.effect("Anthropic upstream response (thinking, tool use, cache usage) -> canonical", () =>
    Effect.gen(function*() {
      const body = input("response-anthropic-to-canonical.input.json")
      golden(
        "response-anthropic-to-canonical.expected.json",
        json(yield* Response.decodeResponse(body, { created: 1700000000 }))
      )
    }))

  it("canonical response -> Anthropic client", () => {
    const { model, response } = input("response-canonical-to-anthropic.input.json")
    golden("response-canonical-to-anthropic.expected.json", json(Response.encodeResponse(response, model)))
  })

  it.effect("Anthropic upstream SSE (streamed tool call with input_json_delta fragments) -> canonical events", () =>
    Effect.gen(function*() {
      const text = readFileSync(join(dir, "stream-anthropic-to-events.input.sse"), "utf8")
      const pieces = [text.slice(0, 41), text.slice(41, 500), text.slice(500, 501), text.slice(501)]
      const events = yield* Stream.fromIterable(pieces).pipe(
        AnthropicStream.decodeSseText({ created: 1 }),
        Stream.runCollect
      )
      golden("stream-anthropic-to-events.expected.json", json(events))
    }))

  it.effect("canonical events -> Anthropic SSE bytes", () =>
    Effect.gen(function*() {
      const { events, model } = input("stream-events-to-anthropic.input.json")
      const sse = (yield* Stream.fromIterable(events as Array<Canonical.StreamEvent>).pipe(
        AnthropicStream.encodeStream(model),
        AnthropicStream.encodeSse,
        Stream.runCollect
      )).join("")
      golden("stream-events-to-anthropic.expected.sse", sse)
    }))
})
