/**
 * Golden files of the Responses API dialect: fixed inputs in
 * test/golden/responses/*.input.* and the exact outputs beside them
 * (*.expected.*), from the request shapes real clients send (Codex CLI's, see
 * the input) and the event sequence of OpenAI's own streams (the fake
 * upstream's, which follows it). Regenerate after an intended change with
 * `UPDATE_GOLDEN=1 npx vitest run packages/openai-adapter/test/ResponsesGolden.test.ts`,
 * then review the diff.
 */
import { assert, describe, it } from "@effect/vitest"
import { Sse } from "@modelgate/core"
import { Responses, ResponsesAnswer, ResponsesRequest } from "@modelgate/openai-adapter"
import { Result } from "effect"
import { existsSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"

const dir = join(import.meta.dirname, "golden", "responses")
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

describe("Responses API golden files", () => {
  it("Codex CLI's request (developer messages, reasoning, a tool loop, hosted tools) -> canonical", () => {
    golden(
      "request-codex.expected.json",
      json(Result.getOrThrow(ResponsesRequest.decodeRequestResult(input("request-codex.input.json"))))
    )
  })

  it("canonical (from Codex's request) -> a Responses upstream's body", () => {
    const canonical = Result.getOrThrow(ResponsesRequest.decodeRequestResult(input("request-codex.input.json")))
    golden(
      "request-to-upstream.expected.json",
      json(Result.getOrThrow(ResponsesRequest.encodeRequestResult(canonical, "gpt-5.1-codex")))
    )
  })

  it("a canonical answer (an Anthropic model's signed thinking, text, a tool call, cache usage) -> a response object", () => {
    const { model, request, response } = input("response-to-client.input.json")
    golden(
      "response-to-client.expected.json",
      json(ResponsesAnswer.encodeResponse(response, model, ResponsesAnswer.echoOf(request)))
    )
  })

  it("canonical events (a Gemini model's thoughts, text, a signed tool call) -> the Responses event sequence", () => {
    const { model, request, events } = input("stream-to-client.input.json")
    const encoder = new ResponsesAnswer.StreamEncoder(model, ResponsesAnswer.echoOf(request))
    let text = ""
    for (const event of [...encoder.pushAll(events), ...encoder.end()]) text += Responses.frame(event)
    golden("stream-to-client.expected.sse", text)
  })

  it("a Responses upstream's stream (reasoning summary, a streamed function call) -> canonical events", () => {
    const text = readFileSync(join(dir, "stream-upstream.input.sse"), "utf8")
    const decoder = new ResponsesAnswer.StreamDecoder()
    const events = Sse.parse(text).flatMap((event) => Result.getOrThrow(decoder.push(JSON.parse(event.data))))
    golden("stream-upstream.expected.json", json(events))
  })
})
