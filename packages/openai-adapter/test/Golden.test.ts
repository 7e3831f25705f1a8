import { assert, describe, it } from "@effect/vitest"
import type { Canonical } from "@modelgate/core"
import { Result } from "effect"
import { readdirSync, readFileSync, writeFileSync } from "node:fs"
import { join } from "node:path"
import { decodeRequestResult, encodeRequest, type EncodeRequestOptions } from "../src/chat/Request.ts"
import { decodeResponseResult, encodeResponse } from "../src/chat/Response.ts"
import { decodeSseText, encodeSseText, type StreamEncoderOptions } from "../src/chat/Stream.ts"

/**
 * Golden files: test/golden/*.json hold an `input` and the `expected` output of
 * one translation, compared exactly. Run with UPDATE_GOLDEN=1 to (re)write
 * `expected` after a deliberate change, then review the diff.
 */
const dir = join(import.meta.dirname, "golden")

interface Golden {
  readonly kind:
    | "request-decode"
    | "request-encode"
    | "response-decode"
    | "response-encode"
    | "stream-decode"
    | "stream-encode"
  readonly input: any
  readonly upstreamModel?: string
  readonly model?: string
  readonly options?: StreamEncoderOptions
  readonly encodeOptions?: EncodeRequestOptions
  readonly expected?: unknown
}

const run = (golden: Golden): unknown => {
  switch (golden.kind) {
    case "request-decode":
      return Result.getOrThrow(decodeRequestResult(golden.input))
    case "request-encode":
      return encodeRequest(golden.input as Canonical.ChatRequest, golden.upstreamModel!, golden.encodeOptions)
    case "response-decode":
      return Result.getOrThrow(decodeResponseResult(golden.input))
    case "response-encode":
      return encodeResponse(golden.input as Canonical.ChatResponse, golden.model!)
    case "stream-decode":
      return Result.getOrThrow(decodeSseText(golden.input as Array<string>))
    case "stream-encode":
      // One element per SSE event, so the file stays readable.
      return encodeSseText(golden.input as Array<Canonical.StreamEvent>, golden.options!)
        .split(/(?<=\n\n)/)
  }
}

describe("golden files", () => {
  const files = readdirSync(dir).filter((name) => name.endsWith(".json")).sort()
  it("there are golden files for every translation", () => {
    const kinds = new Set(files.map((name) => (JSON.parse(readFileSync(join(dir, name), "utf8")) as Golden).kind))
    assert.deepStrictEqual([...kinds].sort(), [
      "request-decode",
      "request-encode",
      "response-decode",
      "response-encode",
      "stream-decode",
      "stream-encode"
    ])
  })
  for (const name of files) {
    it(name, () => {
      const path = join(dir, name)
      const golden = JSON.parse(readFileSync(path, "utf8")) as Golden
      const actual = JSON.parse(JSON.stringify(run(golden)))
      if (process.env.UPDATE_GOLDEN === "1") {
        writeFileSync(path, JSON.stringify({ ...golden, expected: actual }, null, 2) + "\n")
        return
      }
      assert.isDefined(golden.expected, `${name} has no expected output; run with UPDATE_GOLDEN=1`)
      assert.deepStrictEqual(actual, golden.expected)
    })
  }
})
