/**
 * The Responses API's request decisions one by one: what needs response
 * state is refused naming its field, hosted tools and items of kinds no other
 * model runs are left out and noted, what cannot be carried is refused by
 * name, and a malformed item names its path.
 */
import { assert, describe, it } from "@effect/vitest"
import { ResponsesPassthrough, ResponsesRequest } from "@modelgate/openai-adapter"
import { Result } from "effect"

const decode = (body: unknown) => ResponsesRequest.decodeRequestResult(body)
const failure = (body: unknown) => {
  const result = decode(body)
  if (Result.isSuccess(result)) throw new Error(`expected a failure for ${JSON.stringify(body)}`)
  return result.failure
}

describe("ResponsesRequest.decodeRequest", () => {
  it("refuses what needs response state, naming the field, and takes store: false", () => {
    for (
      const [field, value] of [["previous_response_id", "resp_1"], ["store", true], ["conversation", "conv_1"], [
        "background",
        true
      ]] as const
    ) {
      const error = failure({ model: "m", input: "hi", [field]: value })
      assert.strictEqual(error._tag, "InvalidRequest")
      assert.strictEqual(error.param, field)
      assert.match(error.message, /keeps no (response|conversation) state/)
      // The relay refuses the same, before anything is forwarded.
      assert.strictEqual(ResponsesPassthrough.stateRefusal({ [field]: value })?.param, field)
    }
    assert.isTrue(Result.isSuccess(decode({ model: "m", input: "hi", store: false })))
  })

  it("leaves out hosted tools and items of kinds another model cannot run, and notes them", () => {
    const request = Result.getOrThrow(decode({
      model: "m",
      input: [{ type: "web_search_call", id: "ws_1", status: "completed" }, { type: "local_shell_call", id: "ls_1" }, {
        role: "user",
        content: "hi"
      }],
      tools: [{ type: "web_search" }, { type: "function", name: "f", parameters: { type: "object" } }, {
        type: "custom",
        name: "apply_patch"
      }]
    }))
    assert.deepStrictEqual(request.tools, [{ name: "f", parameters: { type: "object" } }])
    assert.deepStrictEqual(request.notes, [
      "input items of type 'web_search_call' left out (1): cannot run on this model",
      "input items of type 'local_shell_call' left out (1): cannot run on this model",
      "tools left out: web_search, custom 'apply_patch' (cannot run on this model)"
    ])
  })

  it("refuses, by name, a forced hosted tool, files stored at OpenAI, and media in function results", () => {
    const cases: ReadonlyArray<readonly [unknown, string]> = [
      [{ model: "m", input: "hi", tool_choice: { type: "web_search" } }, "tool_choice"],
      [
        { model: "m", input: [{ role: "user", content: [{ type: "input_image", file_id: "file_1" }] }] },
        "input[0].content[0].file_id"
      ],
      [
        { model: "m", input: [{ role: "user", content: [{ type: "input_file", file_id: "file_1" }] }] },
        "input[0].content[0].file_id"
      ],
      [{
        model: "m",
        input: [{
          type: "function_call_output",
          call_id: "c",
          output: [{ type: "input_image", image_url: "https://x/y.png" }]
        }]
      }, "input[0].output[0]"],
      [
        {
          model: "m",
          input: [{ role: "developer", content: [{ type: "input_image", image_url: "https://x/y.png" }] }]
        },
        "input[0].content[0]"
      ]
    ]
    for (const [body, param] of cases) {
      const error = failure(body)
      assert.strictEqual(error._tag, "UnsupportedFeature", param)
      assert.strictEqual(error.param, param)
    }
  })

  it("names the path of a malformed body or item", () => {
    const cases: ReadonlyArray<readonly [unknown, string | undefined]> = [
      [{ input: "hi" }, "model"],
      [{ model: "m", input: [] }, "input"],
      [{ model: "m", input: [{ role: "user", content: [{ type: "input_text" }] }] }, "input[0].content[0].text"],
      [{ model: "m", input: [{ role: "robot", content: "x" }] }, "input[0].role"],
      [{ model: "m", input: [{ type: "function_call", call_id: "c", arguments: "{}" }] }, "input[0].name"],
      [{ model: "m", input: "hi", tools: [{ type: "function" }] }, "tools[0].name"],
      [{ model: "m", input: "hi", max_output_tokens: 0 }, "max_output_tokens"]
    ]
    for (const [body, param] of cases) {
      const error = failure(body)
      assert.strictEqual(error._tag, "InvalidRequest", JSON.stringify(body))
      assert.strictEqual(error.param, param, JSON.stringify(body))
    }
  })

  it("restores a reasoning item's signature from its encrypted_content, and keeps OpenAI's own as such", () => {
    const wrapped = ResponsesRequest.wrapSignature("anthropic:sig")
    assert.match(wrapped, /^mgrs_/)
    assert.strictEqual(ResponsesRequest.unwrapSignature(wrapped), "anthropic:sig")
    assert.strictEqual(ResponsesRequest.unwrapSignature("gAAAAB-openai-blob"), "openai:gAAAAB-openai-blob")
    assert.strictEqual(ResponsesRequest.wrapSignature("openai:gAAAAB-openai-blob"), "gAAAAB-openai-blob")
  })
})

describe("ResponsesRequest.encodeRequest", () => {
  it("refuses what the Responses API cannot do, by name", () => {
    const base = {
      model: "m",
      messages: [{ role: "user" as const, content: [{ type: "text" as const, text: "hi" }] }],
      stream: false
    }
    for (const [over, param] of [[{ stop: ["x"] }, "stop"], [{ candidateCount: 2 }, "candidateCount"]] as const) {
      const result = ResponsesRequest.encodeRequestResult({ ...base, ...over }, "up")
      assert.isTrue(Result.isFailure(result))
      if (Result.isFailure(result)) assert.strictEqual(result.failure.param, param)
    }
  })
})
