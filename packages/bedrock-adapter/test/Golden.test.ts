/**
 * Golden files: fixed inputs in test/golden/*.input.* and the exact expected
 * outputs beside them (*.expected.*). Regenerate after an intended change with
 * `UPDATE_GOLDEN=1 npx vitest run --project bedrock-adapter`, then review the diff.
 */
import { assert, describe, it } from "@effect/vitest"
import { Request, Response, Stream } from "@modelgate/bedrock-adapter"
import { toEvents, toFrames } from "@modelgate/bedrock-adapter/testing/Arbitraries"
import { Effect } from "effect"
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
  it.effect("canonical (from an OpenAI client: system, image, PDF, signed reasoning, a tool loop, thinking) -> Converse request", () =>
    Effect.gen(function*() {
      const { request, upstreamModel } = input("request-canonical-to-converse.input.json")
      golden("request-canonical-to-converse.expected.json", json(yield* Request.encodeRequest(request, upstreamModel)))
    }))

  it.effect("Converse answer (reasoning, text, tool use, cache usage) -> canonical", () =>
    Effect.gen(function*() {
      const body = input("response-converse-to-canonical.input.json")
      golden(
        "response-converse-to-canonical.expected.json",
        json(
          yield* Response.decodeResponse(body, {
            id: "chatcmpl-g1",
            model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
            created: 1700000000
          })
        )
      )
    }))

  it("ConverseStream bytes of the same answer -> canonical events", () => {
    const body = input("response-converse-to-canonical.input.json")
    const bytes = toFrames(toEvents(body, [5, 11]))
    const decoder = new Stream.ByteDecoder({
      id: "chatcmpl-g1",
      model: "us.anthropic.claude-sonnet-4-5-20250929-v1:0",
      created: 1700000000
    })
    golden("stream-converse-to-events.expected.json", json([...decoder.push(bytes), ...decoder.end()]))
  })
})
