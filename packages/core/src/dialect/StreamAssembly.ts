/**
 * Folding canonical stream events into a complete response, and unfolding a
 * response into events. The two are inverse up to chunking: however a stream is
 * split into events, `assemble` gives the same response (a law the adapters'
 * property tests check for their own codecs).
 *
 * The fold itself is a pure state machine (`Assembler`), so the gateway can
 * drive it from its per-chunk hot path; `assembleStream` is the same fold over
 * an Effect `Stream` of events, for library users (see
 * docs/design/decisions.md, "Streaming transforms").
 *
 * @since 0.1.0
 */
import { Effect, Stream } from "effect"
import type { ChatResponse, Choice, FinishReason, Part, StreamEvent, Usage } from "./Canonical.ts"

interface ChoiceState {
  readonly parts: Array<Part>
  finishReason: FinishReason | null
  /** Index in `parts` of each tool call, by its `call` number. */
  readonly calls: Map<number, number>
}

/**
 * A mutable accumulator for one stream. Feed it events in order with `add`;
 * `response()` returns what has been assembled so far (also after a cut stream,
 * which is how a partial answer is billed).
 *
 * @category assembly
 */
export class Assembler {
  private id = ""
  private model = ""
  private created = 0
  private usage: Usage | undefined
  private usageRejected: string | undefined
  private readonly choices = new Map<number, ChoiceState>()

  add(event: StreamEvent): void {
    switch (event.type) {
      case "start": {
        this.id = event.id
        this.model = event.model
        this.created = event.created
        return
      }
      case "usage": {
        this.usage = event.usage
        this.usageRejected = undefined
        return
      }
      case "usage_rejected": {
        this.usage = undefined
        this.usageRejected = event.reason
        return
      }
      case "text": {
        const parts = this.choice(event.index).parts
        const last = parts[parts.length - 1]
        if (last !== undefined && last.type === "text") {
          parts[parts.length - 1] = { type: "text", text: last.text + event.text }
        } else parts.push({ type: "text", text: event.text })
        return
      }
      case "thinking": {
        const parts = this.choice(event.index).parts
        const last = parts[parts.length - 1]
        if (last !== undefined && last.type === "thinking" && last.signature === undefined) {
          const signature = event.signature
          parts[parts.length - 1] = signature === undefined
            ? { type: "thinking", text: last.text + event.text }
            : { type: "thinking", text: last.text + event.text, signature }
        } else {
          parts.push(
            event.signature === undefined
              ? { type: "thinking", text: event.text }
              : { type: "thinking", text: event.text, signature: event.signature }
          )
        }
        return
      }
      case "tool_call_start": {
        const state = this.choice(event.index)
        state.calls.set(event.call, state.parts.length)
        state.parts.push(
          event.signature === undefined
            ? { type: "tool_call", id: event.id, name: event.name, arguments: "" }
            : { type: "tool_call", id: event.id, name: event.name, arguments: "", signature: event.signature }
        )
        return
      }
      case "tool_call_delta": {
        const state = this.choice(event.index)
        const at = state.calls.get(event.call)
        if (at === undefined) return
        const part = state.parts[at]!
        if (part.type === "tool_call") state.parts[at] = { ...part, arguments: part.arguments + event.arguments }
        return
      }
      case "finish": {
        this.choice(event.index).finishReason = event.reason
        return
      }
    }
  }

  /** The response assembled so far. @category assembly */
  response(): ChatResponse {
    const choices: Array<Choice> = [...this.choices.entries()]
      .sort(([a], [b]) => a - b)
      .map(([index, state]) => ({ index, content: [...state.parts], finishReason: state.finishReason }))
    const base: ChatResponse = { id: this.id, model: this.model, created: this.created, choices }
    return this.usage !== undefined
      ? { ...base, usage: this.usage }
      : this.usageRejected !== undefined
      ? { ...base, usageRejected: this.usageRejected }
      : base
  }

  private choice(index: number): ChoiceState {
    let state = this.choices.get(index)
    if (state === undefined) {
      state = { parts: [], finishReason: null, calls: new Map() }
      this.choices.set(index, state)
    }
    return state
  }
}

/**
 * Assembles a whole sequence of events into a response.
 *
 * @category assembly
 */
export const assemble = (events: Iterable<StreamEvent>): ChatResponse => {
  const assembler = new Assembler()
  for (const event of events) assembler.add(event)
  return assembler.response()
}

/**
 * Assembles an Effect `Stream` of events into the response: the `Stream`
 * counterpart of `assemble`, folding each chunk of events as it arrives
 * (nothing but the response being built is kept). A failure of the stream
 * fails the effect; to bill a cut stream for what it generated, feed an
 * `Assembler` yourself and read `response()` when the stream ends either way.
 *
 * @example
 * ```ts
 * import { StreamAssembly } from "@modelgate/core"
 * import { Effect, Stream } from "effect"
 *
 * const response = Effect.runPromise(StreamAssembly.assembleStream(Stream.make(
 *   { type: "start", id: "r1", model: "m", created: 0 },
 *   { type: "text", index: 0, text: "Hel" },
 *   { type: "text", index: 0, text: "lo" },
 *   { type: "finish", index: 0, reason: "stop" }
 * )))
 * // { id: "r1", model: "m", created: 0, choices: [{ index: 0, content: [{ type: "text", text: "Hello" }], finishReason: "stop" }] }
 * ```
 *
 * @category assembly
 */
export const assembleStream = <E, R>(events: Stream.Stream<StreamEvent, E, R>): Effect.Effect<ChatResponse, E, R> =>
  Effect.suspend(() => {
    const assembler = new Assembler()
    return Stream.runForEachArray(events, (batch) =>
      Effect.sync(() => {
        for (const event of batch) assembler.add(event)
      })).pipe(Effect.map(() => assembler.response()))
  })

/**
 * Unfolds a response into the events of a stream that assembles back to it
 * (text and thinking as one event per part; tool calls as a start and one
 * argument fragment).
 *
 * @category assembly
 */
export const toEvents = (response: ChatResponse): Array<StreamEvent> => {
  const events: Array<StreamEvent> = [{
    type: "start",
    id: response.id,
    model: response.model,
    created: response.created
  }]
  for (const choice of response.choices) {
    let call = 0
    for (const part of choice.content) {
      switch (part.type) {
        case "text":
          events.push({ type: "text", index: choice.index, text: part.text })
          break
        case "thinking":
          events.push(
            part.signature === undefined
              ? { type: "thinking", index: choice.index, text: part.text }
              : { type: "thinking", index: choice.index, text: part.text, signature: part.signature }
          )
          break
        case "tool_call": {
          events.push(
            part.signature === undefined
              ? { type: "tool_call_start", index: choice.index, call, id: part.id, name: part.name }
              : {
                type: "tool_call_start",
                index: choice.index,
                call,
                id: part.id,
                name: part.name,
                signature: part.signature
              }
          )
          if (part.arguments.length > 0) {
            events.push({ type: "tool_call_delta", index: choice.index, call, arguments: part.arguments })
          }
          call++
          break
        }
        default:
          break
      }
    }
    if (choice.finishReason !== null) events.push({ type: "finish", index: choice.index, reason: choice.finishReason })
  }
  if (response.usage !== undefined) events.push({ type: "usage", usage: response.usage })
  else if (response.usageRejected !== undefined) events.push({ type: "usage_rejected", reason: response.usageRejected })
  return events
}

/**
 * Text of every text and thinking part and every tool call's name and
 * arguments: what a local token count of generated output is based on when an
 * upstream reports no usage.
 *
 * @category assembly
 */
export const generatedText = (response: ChatResponse): string => {
  let text = ""
  for (const choice of response.choices) {
    for (const part of choice.content) {
      if (part.type === "text" || part.type === "thinking") text += part.text
      else if (part.type === "tool_call") text += part.name + part.arguments
    }
  }
  return text
}
