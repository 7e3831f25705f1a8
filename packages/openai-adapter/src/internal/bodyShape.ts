/**
 * A cheap structural check of a chat completions body for the same-dialect
 * passthrough, which forwards the client's body instead of decoding it.
 *
 * It walks the already parsed JSON once, allocates nothing on success, and
 * checks only types and shapes: message roles, content (a string, or an array
 * of parts whose `type` OpenAI defines for that role, with their payload
 * fields), tool calls, tool results, and the types of the known top-level
 * fields (`temperature` a number, `max_tokens` an integer, `stop` a string or
 * an array of strings, `tools` an array of tools, ...). Ranges and model
 * capabilities are left to the upstream, which answers them in its own words
 * (relayed as `upstream_rejected`); unknown fields and unknown tool types pass
 * through untouched.
 *
 * The first problem found is returned with the path of the field
 * (`messages[0].content[1].image_url.url`) and what was expected.
 *
 * @since 0.1.0
 */
import { Predicate } from "effect"

/** A field of the body with the wrong shape. */
export interface ShapeProblem {
  /** The field's path, as OpenAI's `param` names it: `messages[2].content[0].text`. */
  readonly param: string
  readonly message: string
}

/** A short description of a value for messages (long strings are cut). */
const shown = (value: unknown): string => {
  if (value === null) return "null"
  if (Array.isArray(value)) return "an array"
  switch (typeof value) {
    case "string":
      return value.length > 40 ? `the string '${value.slice(0, 40)}...'` : `the string '${value}'`
    case "number":
    case "boolean":
      return `${typeof value === "number" ? "the number" : "the boolean"} ${String(value)}`
    case "object":
      return "an object"
    default:
      return typeof value
  }
}

const wrong = (param: string, expected: string, value: unknown): ShapeProblem => ({
  param,
  message: `Invalid '${param}': expected ${expected}, got ${shown(value)}.`
})

const missing = (param: string, expected: string): ShapeProblem => ({
  param,
  message: `'${param}' is required (${expected}).`
})

/** The problem with a field that must be an object: absent, or something else. */
const notAnObject = (param: string, expected: string, value: unknown): ShapeProblem =>
  value === undefined ? missing(param, expected) : wrong(param, expected, value)

const isNumber = (value: unknown): boolean => typeof value === "number" && Number.isFinite(value)
// Any whole number: a 64-bit `seed` beyond 2^53 is a valid JSON integer (JSON.parse rounds it; the body is forwarded as sent).
const isInteger = (value: unknown): boolean => Number.isInteger(value)

/** A field that may be absent or `null`, else must pass `test`. */
const optional = (
  record: { readonly [key: string]: unknown },
  key: string,
  path: string,
  expected: string,
  test: (value: unknown) => boolean
): ShapeProblem | undefined => {
  const value = record[key]
  return value === undefined || value === null || test(value) ? undefined : wrong(path, expected, value)
}

/** A field that must be present and pass `test`. */
const required = (
  record: { readonly [key: string]: unknown },
  key: string,
  path: string,
  expected: string,
  test: (value: unknown) => boolean
): ShapeProblem | undefined => {
  const value = record[key]
  if (value === undefined) return missing(path, expected)
  return test(value) ? undefined : wrong(path, expected, value)
}

const isStringArray = (value: unknown): boolean => Array.isArray(value) && value.every(Predicate.isString)

// ---------------------------------------------------------------------------
// Messages
// ---------------------------------------------------------------------------

/** The message roles of OpenAI's chat completions (`function` is the deprecated legacy one). */
const ROLES = ["system", "developer", "user", "assistant", "tool", "function"]
const ROLES_TEXT = "one of 'system', 'developer', 'user', 'assistant', 'tool' or 'function'"

/** The content part types each role may carry. */
const PART_TYPES: { readonly [role: string]: ReadonlyArray<string> } = {
  system: ["text"],
  developer: ["text"],
  tool: ["text"],
  user: ["text", "image_url", "input_audio", "file"],
  assistant: ["text", "refusal"]
}

const listed = (types: ReadonlyArray<string>): string =>
  types.length === 1 ? `'${types[0]}'` : `${types.slice(0, -1).map((t) => `'${t}'`).join(", ")} or '${types.at(-1)}'`

const checkPart = (part: unknown, path: string, types: ReadonlyArray<string>): ShapeProblem | undefined => {
  const expected = `a content part of type ${listed(types)}`
  if (!Predicate.isObject(part)) return wrong(path, expected, part)
  const type = part.type
  if (type === undefined) return missing(`${path}.type`, listed(types))
  if (!Predicate.isString(type) || !types.includes(type)) return wrong(`${path}.type`, listed(types), type)
  switch (type) {
    case "text":
      return required(part, "text", `${path}.text`, "a string", Predicate.isString)
    case "refusal":
      return required(part, "refusal", `${path}.refusal`, "a string", Predicate.isString)
    case "image_url": {
      const image = part.image_url
      if (!Predicate.isObject(image)) return notAnObject(`${path}.image_url`, "an object with 'url'", image)
      return required(image, "url", `${path}.image_url.url`, "a string (an https: or data: URL)", Predicate.isString) ??
        optional(image, "detail", `${path}.image_url.detail`, "a string", Predicate.isString)
    }
    case "input_audio": {
      const audio = part.input_audio
      if (!Predicate.isObject(audio)) {
        return notAnObject(`${path}.input_audio`, "an object with 'data' and 'format'", audio)
      }
      return required(audio, "data", `${path}.input_audio.data`, "a base64 string", Predicate.isString) ??
        required(audio, "format", `${path}.input_audio.format`, "a string such as 'wav' or 'mp3'", Predicate.isString)
    }
    default: {
      const file = part.file
      if (!Predicate.isObject(file)) return notAnObject(`${path}.file`, "an object with 'file_data' or 'file_id'", file)
      return optional(file, "file_data", `${path}.file.file_data`, "a string (a data: URL)", Predicate.isString) ??
        optional(file, "file_id", `${path}.file.file_id`, "a string", Predicate.isString) ??
        optional(file, "filename", `${path}.file.filename`, "a string", Predicate.isString)
    }
  }
}

const checkContent = (content: unknown, path: string, role: string): ShapeProblem | undefined => {
  if (Predicate.isString(content)) return undefined
  const types = PART_TYPES[role]!
  if (!Array.isArray(content)) {
    return wrong(path, `a string or an array of content parts (${listed(types)})`, content)
  }
  for (let i = 0; i < content.length; i++) {
    const problem = checkPart(content[i], `${path}[${i}]`, types)
    if (problem !== undefined) return problem
  }
  return undefined
}

const checkToolCall = (call: unknown, path: string): ShapeProblem | undefined => {
  const expected = "a tool call {\"id\",\"type\":\"function\",\"function\":{\"name\",\"arguments\"}}"
  if (!Predicate.isObject(call)) return wrong(path, expected, call)
  const problem = required(call, "id", `${path}.id`, "a string", Predicate.isString) ??
    required(call, "type", `${path}.type`, "'function' or 'custom'", (t) => t === "function" || t === "custom")
  if (problem !== undefined) return problem
  const key = call.type === "function" ? "function" : "custom"
  const body = call[key]
  if (!Predicate.isObject(body)) return notAnObject(`${path}.${key}`, "an object with 'name'", body)
  return required(body, "name", `${path}.${key}.name`, "a string", Predicate.isString) ??
    (key === "function"
      ? required(body, "arguments", `${path}.function.arguments`, "a string of JSON", Predicate.isString)
      : optional(body, "input", `${path}.custom.input`, "a string", Predicate.isString))
}

const checkMessage = (message: unknown, path: string): ShapeProblem | undefined => {
  if (!Predicate.isObject(message)) return wrong(path, "a message object with 'role' and 'content'", message)
  const role = message.role
  if (role === undefined) return missing(`${path}.role`, ROLES_TEXT)
  if (!Predicate.isString(role) || !ROLES.includes(role)) return wrong(`${path}.role`, ROLES_TEXT, role)
  const name = optional(message, "name", `${path}.name`, "a string", Predicate.isString)
  if (name !== undefined) return name
  const content = message.content
  switch (role) {
    case "assistant": {
      if (content !== undefined && content !== null) {
        const problem = checkContent(content, `${path}.content`, role)
        if (problem !== undefined) return problem
      }
      const problem = optional(message, "refusal", `${path}.refusal`, "a string", Predicate.isString) ??
        optional(message, "reasoning_content", `${path}.reasoning_content`, "a string", Predicate.isString) ??
        optional(message, "tool_calls", `${path}.tool_calls`, "an array of tool calls", Array.isArray)
      if (problem !== undefined) return problem
      const calls = message.tool_calls
      if (Array.isArray(calls)) {
        for (let i = 0; i < calls.length; i++) {
          const call = checkToolCall(calls[i], `${path}.tool_calls[${i}]`)
          if (call !== undefined) return call
        }
      }
      return undefined
    }
    case "function":
      return optional(message, "content", `${path}.content`, "a string", Predicate.isString)
    default: {
      if (content === undefined) {
        return missing(`${path}.content`, `a string or an array of content parts (${listed(PART_TYPES[role]!)})`)
      }
      return checkContent(content, `${path}.content`, role) ??
        (role === "tool"
          ? required(message, "tool_call_id", `${path}.tool_call_id`, "a string", Predicate.isString)
          : undefined)
    }
  }
}

// ---------------------------------------------------------------------------
// Top level
// ---------------------------------------------------------------------------

const checkTool = (tool: unknown, path: string): ShapeProblem | undefined => {
  const expected = "a tool {\"type\":\"function\",\"function\":{\"name\",\"parameters\"?}}"
  if (!Predicate.isObject(tool)) return wrong(path, expected, tool)
  const type = required(tool, "type", `${path}.type`, "a string such as 'function'", Predicate.isString)
  if (type !== undefined) return type
  // Tool types other than functions (custom tools, vendors' own) are the upstream's to judge.
  if (tool.type !== "function") return undefined
  const fn = tool.function
  if (!Predicate.isObject(fn)) return notAnObject(`${path}.function`, "an object with 'name'", fn)
  return required(
    fn,
    "name",
    `${path}.function.name`,
    "a non-empty string",
    (n) => Predicate.isString(n) && n.length > 0
  ) ??
    optional(fn, "description", `${path}.function.description`, "a string", Predicate.isString) ??
    optional(fn, "parameters", `${path}.function.parameters`, "a JSON Schema object", Predicate.isObject) ??
    optional(fn, "strict", `${path}.function.strict`, "a boolean", Predicate.isBoolean)
}

/** Top-level fields checked only for their type: the fields, what they must be, and the test. */
const TYPED: ReadonlyArray<readonly [ReadonlyArray<string>, string, (value: unknown) => boolean]> = [
  [["temperature", "top_p", "presence_penalty", "frequency_penalty"], "a number", isNumber],
  [["max_tokens", "max_completion_tokens", "n", "seed", "top_logprobs"], "an integer", isInteger],
  [["logprobs", "parallel_tool_calls", "store"], "a boolean", Predicate.isBoolean],
  [
    ["user", "reasoning_effort", "service_tier", "verbosity", "safety_identifier", "prompt_cache_key"],
    "a string",
    Predicate.isString
  ],
  [["metadata", "logit_bias", "audio", "prediction", "web_search_options"], "an object", Predicate.isObject]
]

/**
 * The fields that size a call's hold (`max_tokens`, `max_completion_tokens`),
 * checked on every body whatever its size (`Passthrough.inspectChatBody`
 * reads them from a scan): each an integer, or absent or `null`.
 */
export const checkSizing = (fields: { readonly [key: string]: unknown }): ShapeProblem | undefined =>
  optional(fields, "max_tokens", "max_tokens", "an integer", isInteger) ??
    optional(fields, "max_completion_tokens", "max_completion_tokens", "an integer", isInteger)

/**
 * Checks the shape of a parsed chat completions body whose `model`, `messages`
 * (an array) and `stream` were already checked. Returns the first problem, or
 * `undefined` when the body has the right shape.
 */
export const checkChatBody = (body: { readonly [key: string]: unknown }): ShapeProblem | undefined => {
  const messages = body.messages as ReadonlyArray<unknown>
  for (let i = 0; i < messages.length; i++) {
    const problem = checkMessage(messages[i], `messages[${i}]`)
    if (problem !== undefined) return problem
  }
  for (const [keys, expected, test] of TYPED) {
    for (const key of keys) {
      const problem = optional(body, key, key, expected, test)
      if (problem !== undefined) return problem
    }
  }
  const problem = optional(
    body,
    "stop",
    "stop",
    "a string or an array of strings",
    (v) => Predicate.isString(v) || isStringArray(v)
  ) ??
    optional(body, "modalities", "modalities", "an array of strings", isStringArray) ??
    optional(
      body,
      "tool_choice",
      "tool_choice",
      "\"none\", \"auto\", \"required\" or an object with 'type'",
      (v) => Predicate.isString(v) || (Predicate.isObject(v) && Predicate.isString(v.type))
    ) ??
    optional(
      body,
      "response_format",
      "response_format",
      "an object with 'type' ('text', 'json_object' or 'json_schema')",
      (v) => Predicate.isObject(v) && Predicate.isString(v.type)
    ) ??
    optional(
      body,
      "stream_options",
      "stream_options",
      "an object such as {\"include_usage\":true}",
      Predicate.isObject
    ) ??
    optional(body, "tools", "tools", "an array of tools", Array.isArray)
  if (problem !== undefined) return problem
  const options = body.stream_options
  if (Predicate.isObject(options)) {
    const usage = optional(options, "include_usage", "stream_options.include_usage", "a boolean", Predicate.isBoolean)
    if (usage !== undefined) return usage
  }
  const format = body.response_format
  if (Predicate.isObject(format) && format.type === "json_schema") {
    const schema = format.json_schema
    if (!Predicate.isObject(schema)) {
      return notAnObject("response_format.json_schema", "an object with 'name' and 'schema'", schema)
    }
    const name = required(schema, "name", "response_format.json_schema.name", "a string", Predicate.isString)
    if (name !== undefined) return name
  }
  const tools = body.tools
  if (Array.isArray(tools)) {
    for (let i = 0; i < tools.length; i++) {
      const tool = checkTool(tools[i], `tools[${i}]`)
      if (tool !== undefined) return tool
    }
  }
  return undefined
}
